import Foundation

/// A file kept by a backend: the Swift counterpart of ModelKit's `MKitServiceFile`. A value, usable
/// as a model property (alone, optional, or in arrays).
///
/// ```swift
/// let photo = try await service.upload(contentsOf: pictureURL, contentType: "image/png")
/// author.photo = photo                      // a property of type ServiceFile?
/// try await service.download(photo, to: cacheURL)
/// ```
///
/// Its stored form, in whole-graph files, stores and records alike:
/// `{"__type": "File", "id": "…", "name": "face.png", "contentType": "image/png",
/// "location": "http://…/attachments/…", "size": 1234, "sha256": "…"}`.
public struct ServiceFile: Hashable, Sendable, Codable {
    /// The id the file is kept under: on Kinto, the id of the record of the
    /// ``KintoService/filesCollection`` that carries it.
    public let id: String
    /// The file's name, as uploaded (its extension tells a server what kind of file it is).
    public let name: String
    /// Its media type, such as `image/png`.
    public let contentType: String
    /// Where the server serves its bytes.
    public let location: URL
    /// Its length in bytes.
    public let size: Int64
    /// The SHA-256 of its bytes, as 64 lowercase hexadecimal digits: a download is checked
    /// against it.
    public let sha256: String

    /// A file as a backend describes it after an upload (an adapter's upload makes one; an app
    /// gets them from ``KintoService/upload(contentsOf:name:contentType:progress:)`` and from the
    /// models that store them).
    ///
    /// - Parameters:
    ///   - id: The id the backend keeps the file under.
    ///   - name: Its name.
    ///   - contentType: Its media type.
    ///   - location: Where the backend serves it.
    ///   - size: Its length in bytes.
    ///   - sha256: The SHA-256 of its bytes, in hexadecimal.
    public init(id: String, name: String, contentType: String, location: URL, size: Int64, sha256: String) {
        self.id = id
        self.name = name
        self.contentType = contentType
        self.location = location
        self.size = size
        self.sha256 = sha256
    }

    private enum CodingKeys: String, CodingKey {
        case type = "__type"
        case id, name, contentType, location, size, sha256
    }

    /// The value of the stored form's `__type`.
    static let typeTag = "File"

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let tag = try container.decode(String.self, forKey: .type)
        guard tag == Self.typeTag else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "Expected \"File\" but found \"\(tag)\"")
        }
        id = try container.decode(String.self, forKey: .id)
        name = try container.decode(String.self, forKey: .name)
        contentType = try container.decode(String.self, forKey: .contentType)
        let text = try container.decode(String.self, forKey: .location)
        guard let location = URL(string: text), location.scheme != nil else {
            throw DecodingError.dataCorruptedError(
                forKey: .location, in: container, debugDescription: "Expected an absolute URL but found \"\(text)\"")
        }
        self.location = location
        size = try container.decode(Int64.self, forKey: .size)
        sha256 = try container.decode(String.self, forKey: .sha256)
        guard size >= 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .size, in: container, debugDescription: "Expected a length of 0 or more but found \(size)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.typeTag, forKey: .type)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(location.absoluteString, forKey: .location)
        try container.encode(size, forKey: .size)
        try container.encode(sha256, forKey: .sha256)
    }
}

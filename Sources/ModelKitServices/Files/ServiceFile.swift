import Foundation

/// A file kept by a backend: the Swift counterpart of ModelKit's `MKitServiceFile`. A value, usable
/// as a model property (alone, optional, or in arrays).
///
/// ```swift
/// let photo = try service.makeFile(contentsOf: pictureURL, contentType: "image/png")  // offline
/// author.photo = photo              // a property of type ServiceFile?
/// try await service.save(author)    // uploads the photo, then writes the record
/// try await service.download(photo, to: cacheURL)
/// ```
///
/// A file is the same value before and after its upload: what it names (an id, a name, a media
/// type) and what its bytes are (length and SHA-256), not where a server keeps them. So a file
/// made offline goes into models and records as it is, and the upload changes no model; the
/// service finds where the bytes are when it downloads them (see
/// ``KintoService/location(of:)``).
///
/// Its stored form, in whole-graph files, stores and records alike:
/// `{"__type": "File", "id": "…", "name": "face.png", "contentType": "image/png", "size": 1234,
/// "sha256": "…"}`.
public struct ServiceFile: Hashable, Sendable, Codable {
    /// The id the file is kept under: on Kinto, the id of the record of the
    /// ``KintoService/filesCollection`` that carries it.
    public let id: String
    /// The file's name (its extension tells a server what kind of file it is).
    public let name: String
    /// Its media type, such as `image/png`.
    public let contentType: String
    /// Its length in bytes.
    public let size: Int64
    /// The SHA-256 of its bytes, as 64 lowercase hexadecimal digits: an upload and a download
    /// are checked against it.
    public let sha256: String

    /// A file with these attributes (an adapter's upload makes one; an app gets them from
    /// ``KintoService/makeFile(contentsOf:name:contentType:)``, from
    /// ``KintoService/upload(contentsOf:name:contentType:progress:)`` and from the models that
    /// store them).
    ///
    /// - Parameters:
    ///   - id: The id the backend keeps the file under.
    ///   - name: Its name.
    ///   - contentType: Its media type.
    ///   - size: Its length in bytes.
    ///   - sha256: The SHA-256 of its bytes, in hexadecimal.
    public init(id: String, name: String, contentType: String, size: Int64, sha256: String) {
        self.id = id
        self.name = name
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256.lowercased()
    }

    private enum CodingKeys: String, CodingKey {
        case type = "__type"
        case id, name, contentType, size, sha256
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
        size = try container.decode(Int64.self, forKey: .size)
        let sha256 = try container.decode(String.self, forKey: .sha256)
        guard sha256.utf8.count == 64, sha256.utf8.allSatisfy({ $0.isHexDigit }) else {
            throw DecodingError.dataCorruptedError(
                forKey: .sha256, in: container, debugDescription: "Expected 64 hexadecimal digits but found \"\(sha256)\"")
        }
        self.sha256 = sha256.lowercased()
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
        try container.encode(size, forKey: .size)
        try container.encode(sha256, forKey: .sha256)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

import Foundation
import ModelKit

/// A model type whose instances are stored on a backend, one record per model in the collection
/// named ``ModelKit/Model/modelName``, with ``ModelKit/Model/objectId`` as the record id (the
/// seed's `MKitParseModel`).
///
/// ```swift
/// final class Author: ModelObject<Author.Properties>, RemoteModel {
///     struct Properties: ModelProperties { var name = "" }
/// }
/// ```
///
/// Fetching resolves references by model name, so register every remote type at launch
/// (`ModelRegistry.register(Author.self, Post.self)`), or use it before the first fetch.
public protocol RemoteModel: Model {}

/// Names a record on a backend: its collection (the model name) and its id (the object id).
public struct RecordID: Hashable, Sendable, CustomStringConvertible {
    public let collection: String
    public let id: String

    public init(collection: String, id: String) {
        self.collection = collection
        self.id = id
    }

    public var description: String { "\(collection)/\(id)" }
}

/// A record's version on the server, sent back as a precondition on the next write (for Kinto:
/// `last_modified`, whose ETag is the same number in quotes).
public struct RemoteVersion: Hashable, Sendable {
    public let rawValue: String

    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }
}

/// A record as the server stores it: its fields in the JSON form of ``ModelKit/ModelValue``.
public struct RemoteRecord: Sendable {
    public let id: RecordID
    public let version: RemoteVersion
    /// The record as JSON text, parsed once: models are loaded from it where it lies.
    let text: JSONRecordText
    /// The record's object in `text`.
    let node: Int
    /// Fields whose text does not parse back (nested deeper than JSON text is read), kept as
    /// given: `text` is then `null`, and loading the record fails with that reason.
    private let unreadable: ModelValue.Object?

    /// A record with these fields (an adapter that has them as values; Kinto's records are read
    /// from its answers' text).
    ///
    /// - Complexity: O(*n*) in the size of the fields, which are written out as JSON text and
    ///   parsed back: records are loaded one way, from text.
    public init(id: RecordID, version: RemoteVersion, fields: ModelValue.Object) {
        self.id = id
        self.version = version
        if let text = try? JSONRecordText(ModelValue.object(fields).jsonData()) {
            self.text = text
            unreadable = nil
        } else {
            text = Self.null
            unreadable = fields
        }
        node = text.root
    }

    /// A record whose fields are `jsonData`, UTF-8 JSON text of one object: what an adapter
    /// whose backend stores JSON hands back as it is (the text a save gave it in
    /// ``RecordFields/jsonData``, say), with no values built in between.
    ///
    /// ```swift
    /// let record = try RemoteRecord(id: id, version: RemoteVersion("3"), jsonData: stored.fields.jsonData)
    /// ```
    ///
    /// - Throws: ``ServiceError/Code/invalidResponse``, naming `id`, when the text is not JSON
    ///   or not an object.
    /// - Complexity: O(*n*) in the size of the text, which is parsed once.
    public init(id: RecordID, version: RemoteVersion, jsonData: Data) throws(ServiceError) {
        let text: JSONRecordText
        do {
            text = try JSONRecordText(jsonData)
        } catch {
            let preview = String(decoding: jsonData.prefix(80), as: UTF8.self)
            throw .invalidResponse(expected: "a record as JSON text", found: "'\(preview)' (\(error))", record: id)
        }
        guard text.isObject(text.root) else {
            let preview = String(decoding: jsonData.prefix(80), as: UTF8.self)
            throw .invalidResponse(expected: "a JSON object as the record", found: "'\(preview)'", record: id)
        }
        self.init(id: id, version: version, text: text, node: text.root)
    }

    /// The text `null` (which parses).
    private static let null = (try? JSONRecordText(Data("null".utf8)))!

    /// The record at `node` of an answer's text, which must be an object.
    init(id: RecordID, version: RemoteVersion, text: JSONRecordText, node: Int) {
        self.id = id
        self.version = version
        self.text = text
        self.node = node
        unreadable = nil
    }

    /// The record's fields.
    ///
    /// - Complexity: O(*n*) in the size of the record: they are read from its text.
    public var fields: ModelValue.Object {
        if let unreadable { return unreadable }
        guard case .object(let object)? = try? text.value(node) else { return ModelValue.Object() }
        return object
    }

    /// The `modelId` field, when it is a string.
    var storedModelId: String? {
        text.member(node, "modelId").flatMap(text.string)
    }

    /// The `createdAt` field, when it is a date as records hold them (`{"__type": "Date", "iso":
    /// …}`) or ISO 8601 text.
    var storedCreatedAt: Date? {
        guard let field = text.member(node, "createdAt") else { return nil }
        let iso = text.member(field, "iso") ?? field
        return text.string(iso).flatMap(ISODate.date(from:))
    }
}

/// One write for ``ModelService/perform(_:)``.
public enum RecordWrite: Sendable {
    /// Creates the record, failing with a conflict if it exists.
    case create(RecordID, fields: RecordFields)
    /// Replaces the record, failing with a conflict unless its version is `expected`.
    case update(RecordID, fields: RecordFields, expected: RemoteVersion)
    /// Deletes the record, failing with a conflict unless its version is `expected` (when given).
    case delete(RecordID, expected: RemoteVersion?)

    /// The record written.
    public var record: RecordID {
        switch self {
        case .create(let id, _), .update(let id, _, _), .delete(let id, _): id
        }
    }
}

/// What became of one write.
public enum RecordWriteResult: Sendable {
    /// Written: the record's new version (for a delete, the tombstone's).
    case written(RemoteVersion)
    /// Not written, and why.
    case failed(ServiceError)
}

/// A backend that stores records: what an adapter implements (the seed's `MKitService`).
///
/// It only sees `Sendable` values (record ids, fields as ``RecordFields``, versions), so
/// it runs off the caller's actor. The model-level operations (``save(_:isolation:)``,
/// ``fetch(_:referenceDepth:maximumRecords:isolation:)``, ``delete(_:isolation:)``) are written
/// once, on top of these calls, and run in the caller's isolation domain, where the models live.
public protocol ModelService: AnyObject, Sendable {
    /// Names the store the records live in: two services with the same identifier see the same
    /// records (the same server, bucket and user), so they share the versions a context keeps.
    var storeIdentifier: String { get }

    /// Sends the writes in order, in as few requests as the backend allows, and returns a result
    /// per write. Writes after a failed request come back as ``ServiceError/Code/notAttempted``.
    func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult]

    /// Reads one record; a missing one is ``ServiceError/Code/notFound``.
    func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord

    /// How closely the backend evaluates `condition` over every value ModelKit writes: queries
    /// send it only when the answer holds every match (``RecordConditionSupport/superset``), and
    /// evaluate it again on the client unless it is ``RecordConditionSupport/exact``.
    ///
    /// The default is ``RecordConditionSupport/unsupported``: everything is evaluated on the
    /// client. Pure and fast: it is asked once per condition of a query.
    func evaluation(of condition: RecordCondition) -> RecordConditionSupport

    /// Whether the backend orders records by `field` exactly as ModelKit orders its values
    /// (ascending: `null` first). The default is `false`.
    func canSort(by field: RecordField) -> Bool

    /// One page of the records of `request.collection` that satisfy its conditions, in its
    /// order: the first page for a `nil` cursor, else the page the cursor names. A page may hold
    /// fewer records than asked for; the list ends when ``RecordPage/next`` is `nil`.
    ///
    /// The default throws ``ServiceError/Code/notSupported``.
    func listRecords(_ request: RecordListRequest, after cursor: RecordCursor?) async throws(ServiceError) -> RecordPage

    /// How many records of `request.collection` satisfy its conditions (order and limit are
    /// ignored).
    ///
    /// The default throws ``ServiceError/Code/notSupported``.
    func countRecords(_ request: RecordListRequest) async throws(ServiceError) -> Int

    /// One page of what changed in `collection` since `since`: the records created or changed,
    /// oldest change first, and (when `since` is given) the records deleted. A `nil` `since` asks
    /// for every live record. The first page is asked with a `nil` cursor, the later ones with
    /// the ``RecordChanges/next`` of the page before and the same `since`; each page carries the
    /// ``RecordChanges/timestamp`` to pass as `since` on the next pull. A change made while the
    /// pages are read shows on a later page or on the next pull (possibly on both): none is lost.
    ///
    /// The default throws ``ServiceError/Code/notSupported``.
    func changes(in collection: String, since: RemoteVersion?, after cursor: RecordCursor?) async throws(ServiceError)
        -> RecordChanges
}

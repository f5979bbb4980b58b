import Foundation
import ModelKit

// Sharing on Kinto's permissions: every object (bucket, collection, group, record) has a
// `permissions` member mapping a permission (`read`, `write`, `record:create`) to principals.
// They add up down the tree, so a collection's `read` lets its readers read every record in it.
// Permissions are replaced with a PATCH of that member alone; Kinto then adds whoever sent it to
// `write` (nobody locks themselves out) and gives the object a new `last_modified`.
extension KintoService: SharingService {
    public func permissions(of record: RecordID) async throws(ServiceError) -> Permissions {
        try Self.checkIds(record)
        return try await permissions(at: recordPath(record), record: record)
    }

    public func setPermissions(_ permissions: Permissions, of record: RecordID, expected: RemoteVersion?)
        async throws(ServiceError) -> RemoteVersion
    {
        try Self.checkIds(record)
        guard permissions.create.isEmpty else {
            throw .invalidModel(
                expected: "no create permission for a record", found: "\(permissions.create.map(\.description).sorted())",
                record: record)
        }
        var headers: [String: String] = [:]
        if let expected { headers["If-Match"] = "\"\(expected.rawValue)\"" }
        let body = try await permissionsBody(permissions, collection: false)
        let response = try await send("PATCH", path: recordPath(record), body: body.jsonData(), headers: headers)
        guard response.status == 200 else {
            if response.status == 412, response.attempts > 1, let version = try await alreadySet(permissions, of: record) {
                return version
            }
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(record)
        }
        let answer = try Self.json(response.body, record: record)
        return try Self.version(answer["data"]?["last_modified"], at: "data.last_modified", record: record)
    }

    /// For a change of permissions sent more than once and refused on its precondition: the
    /// record's version when an earlier attempt made the change (its answer was lost), that is
    /// when the record has exactly these permissions, this service's user among the writers as
    /// Kinto adds them; else nil, and the refusal is a conflict.
    private func alreadySet(_ permissions: Permissions, of record: RecordID) async throws(ServiceError) -> RemoteVersion? {
        let response = try await send("GET", path: recordPath(record), body: nil)
        guard response.status == 200 else { return nil }
        let answer = try Self.json(response.body, record: record)
        var expected = permissions
        if let user { expected.write.insert(.user(user)) }
        guard try await self.permissions(in: answer, record: record) == expected else { return nil }
        return try Self.version(answer["data"]?["last_modified"], at: "data.last_modified", record: record)
    }

    public func permissions(ofCollection collection: String) async throws(ServiceError) -> Permissions {
        let id = RecordID(collection: collection, id: collection)
        try Self.checkName(collection, of: "collection")
        return try await permissions(at: collectionObjectPath(collection), record: id)
    }

    public func setPermissions(_ permissions: Permissions, ofCollection collection: String) async throws(ServiceError) {
        try Self.checkName(collection, of: "collection")
        let body = try await permissionsBody(permissions, collection: true)
        let response = try await send("PATCH", path: collectionObjectPath(collection), body: body.jsonData())
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
                .about(RecordID(collection: collection, id: collection))
        }
    }

    // MARK: Paths and principals

    func collectionObjectPath(_ collection: String) -> String { "/buckets/\(bucket)/collections/\(collection)" }

    func groupPath(_ name: String) -> String { "/buckets/\(bucket)/groups/\(name)" }

    /// The bucket's id as principals name it: the personal bucket (`default`) is an alias the
    /// server resolves per user, and its groups are principals under the real id (`GET /`
    /// answers it as `user.bucket`).
    func bucketId() async throws(ServiceError) -> String {
        guard bucket == "default" else { return bucket }
        let response = try await send("GET", path: "/", body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        guard case .string(let id)? = try Self.json(response.body, record: nil)["user"]?["bucket"] else {
            throw .unauthorized(message: "the personal bucket needs a logged-in user")
        }
        return id
    }

    /// A principal as Kinto spells it, for a bucket whose id is `bucketId`.
    static func kintoPrincipal(_ principal: Principal, bucketId: String) -> String {
        switch principal {
        case .everyone: "system.Everyone"
        case .authenticated: "system.Authenticated"
        case .user(let name): "account:\(name)"
        case .group(let name): "/buckets/\(bucketId)/groups/\(name)"
        case .other(let raw): raw
        }
    }

    /// A principal as Kinto spells it, read back; a group of another bucket stays as it is.
    static func principal(_ text: String, bucketId: String) -> Principal {
        switch text {
        case "system.Everyone": return .everyone
        case "system.Authenticated": return .authenticated
        default:
            if text.hasPrefix("account:") { return .user(String(text.dropFirst("account:".count))) }
            let groups = "/buckets/\(bucketId)/groups/"
            if text.hasPrefix(groups), !text.dropFirst(groups.count).contains("/") {
                return .group(String(text.dropFirst(groups.count)))
            }
            return .other(text)
        }
    }

    /// Checks what a principal names: a user or group name must be a valid id, and Kinto's other
    /// principals are sent as given but must not be empty.
    static func checkPrincipal(_ principal: Principal) throws(ServiceError) {
        switch principal {
        case .everyone, .authenticated: return
        case .user(let name), .group(let name):
            guard RecordCodec.isValidId(name) else {
                throw .invalidModel(expected: "a \(principal) name of letters, digits, '_' and '-'", found: "'\(name)'")
            }
        case .other(let raw):
            guard !raw.isEmpty, !raw.contains(where: \.isWhitespace) else {
                throw .invalidModel(expected: "a principal without spaces", found: "'\(raw)'")
            }
        }
    }

    private func permissionsBody(_ permissions: Permissions, collection: Bool) async throws(ServiceError) -> ModelValue {
        var all = permissions.read.union(permissions.write)
        if collection { all.formUnion(permissions.create) }
        for principal in all { try Self.checkPrincipal(principal) }
        // Only a group needs the bucket's real id (one request more in the personal bucket).
        let bucketId = all.contains { if case .group = $0 { true } else { false } } ? try await bucketId() : bucket
        func list(_ principals: Set<Principal>) -> ModelValue {
            .array(principals.map { Self.kintoPrincipal($0, bucketId: bucketId) }.sorted().map(ModelValue.string))
        }
        var pairs = [("read", list(permissions.read)), ("write", list(permissions.write))]
        if collection { pairs.append(("record:create", list(permissions.create))) }
        return ["permissions": .object(ModelValue.Object(pairs))]
    }

    /// The permissions of the object at `path`. Kinto shows them only to those who may write
    /// the object: to a reader they are empty.
    private func permissions(at path: String, record: RecordID) async throws(ServiceError) -> Permissions {
        let response = try await send("GET", path: path, body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(record)
        }
        return try await permissions(in: Self.json(response.body, record: record), record: record)
    }

    /// The permissions in an answer of Kinto's (its `permissions` member).
    private func permissions(in answer: ModelValue, record: RecordID) async throws(ServiceError) -> Permissions {
        guard case .object(let members)? = answer["permissions"] else {
            throw .invalidResponse(
                at: "permissions", expected: "an object", found: Self.describe(answer["permissions"]), record: record)
        }
        let bucketId = try await groupsMentioned(members) ? bucketId() : bucket
        var result = Permissions()
        for (name, value) in members {
            guard case .array(let items) = value else {
                throw .invalidResponse(
                    at: "permissions.\(name)", expected: "an array", found: Self.describe(value), record: record)
            }
            var principals = Set<Principal>()
            for (index, item) in items.enumerated() {
                guard let text = item.stringValue else {
                    throw .invalidResponse(
                        at: "permissions.\(name)[\(index)]", expected: "a string", found: Self.describe(item), record: record)
                }
                principals.insert(Self.principal(text, bucketId: bucketId))
            }
            switch name {
            case "read": result.read = principals
            case "write": result.write = principals
            case "record:create": result.create = principals
            default: continue  // Kinto's other permissions (collection:create, …) are not a collection's or record's
            }
        }
        return result
    }

    /// Whether any principal in `members` is a group of some bucket (so the bucket's real id is
    /// needed to read it back).
    private func groupsMentioned(_ members: ModelValue.Object) -> Bool {
        members.contains { _, value in
            guard case .array(let items) = value else { return false }
            return items.contains { $0.stringValue?.contains("/groups/") == true }
        }
    }

    static func checkIds(_ record: RecordID) throws(ServiceError) {
        guard RecordCodec.isValidId(record.id), RecordCodec.isValidId(record.collection) else {
            throw .invalidModel(expected: "ids of letters, digits, '_' and '-'", found: "'\(record)'", record: record)
        }
    }

    static func checkName(_ name: String, of kind: String) throws(ServiceError) {
        guard RecordCodec.isValidId(name) else {
            throw .invalidModel(expected: "a \(kind) name of letters, digits, '_' and '-'", found: "'\(name)'")
        }
    }
}

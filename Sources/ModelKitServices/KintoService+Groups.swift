import Foundation
import ModelKit

// Groups on Kinto: objects of the service's bucket (`/buckets/<bucket>/groups/<name>`) whose
// `members` are principals; the group's own principal is its path under the bucket's real id.
// Creating one takes `write` (or `group:create`) on the bucket; changing one, `write` on it (its
// creator has it). A membership change reads the group and writes it back with `If-Match`, again
// when another client changed it in between, so concurrent changes are never lost.
extension KintoService {
    /// How often a membership change is tried when other clients keep changing the group.
    static let membershipAttempts = 8

    public func createGroup(_ name: String, members: Set<Principal>) async throws(ServiceError) {
        let id = Self.groupRecord(name)
        try Self.checkName(name, of: "group")
        let body = try await membersBody(members, group: id)
        let response = try await send("PUT", path: groupPath(name), body: body.jsonData(), headers: ["If-None-Match": "*"])
        guard response.status == 201 else {
            // Sent again after a lost answer, the create finds its own group: done, not a conflict.
            if response.status == 412, response.attempts > 1, try await self.members(ofGroup: name) == members { return }
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(id)
        }
    }

    public func members(ofGroup name: String) async throws(ServiceError) -> Set<Principal> {
        try Self.checkName(name, of: "group")
        return try await group(name).members
    }

    public func addMembers(_ members: Set<Principal>, toGroup name: String) async throws(ServiceError) {
        try await changeMembers(of: name) { $0.union(members) }
    }

    public func removeMembers(_ members: Set<Principal>, fromGroup name: String) async throws(ServiceError) {
        try await changeMembers(of: name) { $0.subtracting(members) }
    }

    public func deleteGroup(_ name: String) async throws(ServiceError) {
        let id = Self.groupRecord(name)
        try Self.checkName(name, of: "group")
        let response = try await send("DELETE", path: groupPath(name), body: nil)
        // Gone is gone: a 404 may be this very delete's, done by an attempt whose answer was lost,
        // and the attempts do not tell, since libcurl resends a request without a body on a new
        // connection by itself when the kept-alive one turns out closed (seen: two DELETEs at
        // the server, one attempt here).
        guard response.status == 200 || response.status == 404 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(id)
        }
    }

    // MARK: Reading and writing a group

    /// Errors about a group name it as a record of the collection `groups`.
    static func groupRecord(_ name: String) -> RecordID { RecordID(collection: "groups", id: name) }

    /// The group's members and version.
    private func group(_ name: String) async throws(ServiceError) -> (members: Set<Principal>, version: RemoteVersion) {
        let id = Self.groupRecord(name)
        let response = try await send("GET", path: groupPath(name), body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(id)
        }
        let answer = try Self.json(response.body, record: id)
        let version = try Self.version(answer["data"]?["last_modified"], at: "data.last_modified", record: id)
        guard case .array(let items)? = answer["data"]?["members"] else {
            throw .invalidResponse(
                at: "data.members", expected: "an array", found: Self.describe(answer["data"]?["members"]), record: id)
        }
        var texts: [String] = []
        for (index, item) in items.enumerated() {
            guard let text = item.stringValue else {
                throw .invalidResponse(at: "data.members[\(index)]", expected: "a string", found: Self.describe(item), record: id)
            }
            texts.append(text)
        }
        let bucketId = texts.contains { $0.contains("/groups/") } ? try await bucketId() : bucket
        return (Set(texts.map { Self.principal($0, bucketId: bucketId) }), version)
    }

    private func changeMembers(of name: String, _ change: (Set<Principal>) -> Set<Principal>) async throws(ServiceError) {
        let id = Self.groupRecord(name)
        try Self.checkName(name, of: "group")
        var attempt = 0
        while true {
            attempt += 1
            let current = try await group(name)
            let wanted = change(current.members)
            if wanted == current.members { return }
            let body = try await membersBody(wanted, group: id)
            let response = try await send(
                "PUT", path: groupPath(name), body: body.jsonData(), headers: ["If-Match": "\"\(current.version.rawValue)\""])
            if response.status == 200 { return }
            // Another client changed the group since it was read (or a lost answer's retry found
            // this very change done): read it again and apply the change to what is there.
            guard response.status == 412, attempt < Self.membershipAttempts else {
                throw Self.failure(status: response.status, body: response.body, headers: response.headers).about(id)
            }
        }
    }

    /// The body of a group with `members`, which must be users, authenticated or principals as
    /// Kinto spells them: Kinto refuses `system.Everyone` and groups as members (a group does
    /// not nest), with a 400 that would say less than this.
    private func membersBody(_ members: Set<Principal>, group: RecordID) async throws(ServiceError) -> ModelValue {
        for member in members {
            try Self.checkPrincipal(member)
            switch member {
            case .group, .everyone:
                throw .invalidModel(
                    expected: "users as members (not everyone, and groups do not nest)", found: "\(member)", record: group)
            case .user, .authenticated, .other:
                continue
            }
        }
        let texts = members.map { Self.kintoPrincipal($0, bucketId: bucket) }.sorted()
        return ["data": ["members": .array(texts.map(ModelValue.string))]]
    }
}

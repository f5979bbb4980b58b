import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// Permissions and groups with three real users on the real Kinto server (KintoFixture.swift):
/// what each can read, write, query and delete, through the library. Each test has a bucket of
/// its own, owned by the fixture's account (the administrator), where any user may create records.
@Suite("Sharing and permissions on a real server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct SharingTests {
    /// The administrator's service on a fresh bucket, and a service for each of three new users.
    struct Team {
        let admin: KintoService
        let alice: KintoService
        let bob: KintoService
        let carol: KintoService
        var bucket: String { admin.bucket }

        func name(_ service: KintoService) -> String { service.user ?? "" }
    }

    static func team() async throws -> Team {
        let admin = try await KintoServer.freshService()
        // Any logged-in user may create records; nobody else may do anything yet.
        for type in [Writer.modelName, Article.modelName] {
            try await admin.setPermissions(Permissions(create: [.authenticated]), ofCollection: type)
        }
        let server = try await KintoServer.shared.value
        var users: [KintoService] = []
        for _ in 0..<3 {
            let name = "s-" + UUID().uuidString.lowercased()
            let made = try await server.request(
                "PUT", "/accounts/\(name)", body: ["data": ["password": "pw"]], headers: ["If-None-Match": "*"],
                authenticated: false)
            guard made.status == 201 else { throw FixtureError("sign-up of \(name) answered \(made.status)") }
            users.append(KintoService(url: server.url, bucket: admin.bucket, user: name, password: "pw", timeout: .seconds(120)))
        }
        return Team(admin: admin, alice: users[0], bob: users[1], carol: users[2])
    }

    /// Saves a new writer named `name` through `service` and returns it (its context is `context`).
    static func saveWriter(_ name: String, through service: KintoService, in context: ModelContext) async throws -> Writer {
        let writer = Writer.instance(in: context)
        writer.name = name
        try await service.save(writer)
        return writer
    }

    /// What `service` can do with the record of `objectId`: read it, find it by a query, change
    /// it and delete it (the change and the delete only when asked, as they change the record).
    struct Access: Equatable, CustomStringConvertible {
        var read = false
        var query = false
        var write = false
        var delete = false
        var description: String { "read \(read), query \(query), write \(write), delete \(delete)" }
    }

    static func access(
        _ objectId: String, through service: KintoService, tryWrite: Bool = true, tryDelete: Bool = false
    ) async throws -> Access {
        var access = Access()
        let context = ModelContext()
        let copy = Writer.instance(objectId: objectId, in: context)
        do {
            try await service.fetch(copy)
            access.read = true
        } catch {
            #expect([.forbidden, .unauthorized].contains(error.code), "read: \(error)")
            #expect(copy.modelState == .needsData)
        }
        let found = try await service.fetch(Writer.query(in: ModelContext()).where(\.name, .notEquals("")))
        access.query = found.contains { $0.objectId == objectId }
        let blind = ModelContext()  // kept alive: a model of a context that is gone cannot be saved
        if tryWrite {
            let writer = access.read ? copy : Writer.instance(objectId: objectId, in: blind)
            writer.age += 1
            do {
                try await service.save(writer)
                access.write = true
            } catch {
                // One who may create records but not read this one is refused the create: conflict.
                #expect([.forbidden, .unauthorized, .conflict].contains(error.code), "write: \(error)")
                #expect(writer.hasChanges)
            }
        }
        if tryDelete {
            do {
                try await service.delete(copy)
                access.delete = true
            } catch {
                #expect([.forbidden, .unauthorized].contains(error.code), "delete: \(error)")
                #expect(copy.modelContext === context)
            }
        }
        withExtendedLifetime((context, blind)) {}
        return access
    }

    @Test(
        "By default a saved model is its creator's alone: only the creator writes it, and others neither read, query nor delete it"
    )
    func defaults() async throws {
        let team = try await Self.team()
        let context = ModelContext()
        let writer = try await Self.saveWriter("Alice's", through: team.alice, in: context)
        let objectId = try #require(writer.objectId)

        let permissions = try await team.alice.permissions(of: writer)
        #expect(permissions == Permissions(write: [.user(team.name(team.alice))]))
        #expect(
            try await team.admin.permissions(of: Writer.self)
                == Permissions(
                    write: [.user(team.name(team.admin))], create: [.authenticated]))

        for other in [team.bob, team.carol] {
            #expect(try await Self.access(objectId, through: other, tryDelete: true) == Self.Access())
        }
        // The bucket's owner may do everything.
        #expect(try await Self.access(objectId, through: team.admin) == Self.Access(read: true, query: true, write: true))
        // Alice still can, after the administrator's change (she fetches it first).
        #expect(
            try await Self.access(objectId, through: team.alice, tryDelete: true)
                == Self.Access(
                    read: true, query: true, write: true, delete: true))
    }

    @Test(
        "A model shared for reading with one user: that user reads and queries it, but cannot change or delete it; the third sees nothing"
    )
    func readSharedWithOneUser() async throws {
        let team = try await Self.team()
        let context = ModelContext()
        let writer = try await Self.saveWriter("Shared with Bob", through: team.alice, in: context)
        let objectId = try #require(writer.objectId)

        try await team.alice.setPermissions(Permissions(read: [.user(team.name(team.bob))]), of: writer)
        let set = try await team.alice.permissions(of: writer)
        #expect(set.read == [.user(team.name(team.bob))])
        #expect(set.write == [.user(team.name(team.alice))])  // the sharer stays a writer

        // The model's next save is an ordinary update: the context has the version after the change.
        writer.name = "Shared with Bob, renamed"
        try await team.alice.save(writer)
        #expect(!writer.hasChanges)

        #expect(try await Self.access(objectId, through: team.bob, tryDelete: true) == Self.Access(read: true, query: true))
        #expect(try await Self.access(objectId, through: team.carol, tryDelete: true) == Self.Access())
        // Bob sees the permissions as a reader: not at all (Kinto shows them to writers only).
        #expect(try await team.bob.permissions(of: RecordID(collection: "Writer", id: objectId)) == Permissions())

        // Unshared again: Bob loses it.
        try await team.alice.setPermissions(Permissions(), of: writer)
        #expect(try await Self.access(objectId, through: team.bob, tryWrite: false) == Self.Access())
        let check = ModelContext()
        let stored = Writer.instance(objectId: objectId, in: check)
        try await team.alice.fetch(stored)
        #expect(stored.name == "Shared with Bob, renamed")
        #expect(stored.age == 0)
    }

    @Test(
        "Everyone and authenticated: a model readable by everyone is read without logging in; by authenticated, by any user only")
    func everyoneAndAuthenticated() async throws {
        let team = try await Self.team()
        let context = ModelContext()
        let open = try await Self.saveWriter("Public", through: team.alice, in: context)
        let members = try await Self.saveWriter("Members only", through: team.alice, in: context)
        try await team.alice.setPermissions(Permissions(read: [.everyone]), of: open)
        try await team.alice.setPermissions(Permissions(read: [.authenticated]), of: members)

        let server = try await KintoServer.shared.value
        let anonymous = KintoService(url: server.url, bucket: team.bucket, timeout: .seconds(120))
        let reader = ModelContext()
        let publicCopy = Writer.instance(objectId: try #require(open.objectId), in: reader)
        try await anonymous.fetch(publicCopy)
        #expect(publicCopy.name == "Public")
        let membersCopy = Writer.instance(objectId: try #require(members.objectId), in: reader)
        let refused = await #expect(throws: ServiceError.self) { try await anonymous.fetch(membersCopy) }
        #expect(refused?.code == .unauthorized)
        #expect(membersCopy.modelState == .needsData)

        for user in [team.bob, team.carol] {
            #expect(
                try await Self.access(try #require(members.objectId), through: user, tryDelete: true)
                    == Self.Access(read: true, query: true))
        }
    }

    @Test("Write shared with a group: its members change and delete the model, members added can, members removed cannot")
    func groupWriters() async throws {
        let team = try await Self.team()
        let bob = team.name(team.bob)
        let carol = team.name(team.carol)
        try await team.admin.createGroup("editors", members: [.user(bob)])
        #expect(try await team.admin.members(ofGroup: "editors") == [.user(bob)])

        let context = ModelContext()
        let writer = try await Self.saveWriter("Edited", through: team.alice, in: context)
        let objectId = try #require(writer.objectId)
        try await team.alice.setPermissions(Permissions(write: [.group("editors")]), of: writer)
        #expect(try await team.alice.permissions(of: writer).write == [.user(team.name(team.alice)), .group("editors")])

        #expect(try await Self.access(objectId, through: team.bob) == Self.Access(read: true, query: true, write: true))
        #expect(try await Self.access(objectId, through: team.carol) == Self.Access())

        try await team.admin.addMembers([.user(carol)], toGroup: "editors")
        try await team.admin.removeMembers([.user(bob), .user("nobody-at-all")], fromGroup: "editors")
        #expect(try await team.admin.members(ofGroup: "editors") == [.user(carol)])
        // Kinto makes whoever writes a record one of its writers: Bob, who changed it as an
        // editor, still may. Setting the permissions again takes him off.
        let alice = team.name(team.alice)
        #expect(try await team.alice.permissions(of: writer).write == [.user(alice), .group("editors"), .user(bob)])
        #expect(try await Self.access(objectId, through: team.bob, tryWrite: false) == Self.Access(read: true, query: true))
        try await team.alice.fetch(writer)  // Bob's change is a version this context has not seen
        try await team.alice.setPermissions(Permissions(write: [.group("editors")]), of: writer)
        #expect(try await team.alice.permissions(of: writer).write == [.user(alice), .group("editors")])
        #expect(try await Self.access(objectId, through: team.bob, tryDelete: true) == Self.Access())
        #expect(
            try await Self.access(objectId, through: team.carol, tryDelete: true)
                == Self.Access(read: true, query: true, write: true, delete: true))

        // Bob, not the group's writer, cannot change it; deleting it ends what it gave.
        let denied = await #expect(throws: ServiceError.self) { try await team.bob.addMembers([.user(bob)], toGroup: "editors") }
        #expect(denied?.code == .forbidden)
        try await team.admin.deleteGroup("editors")
        let gone = await #expect(throws: ServiceError.self) { _ = try await team.admin.members(ofGroup: "editors") }
        #expect(gone?.code == .notFound)
        #expect(gone?.record == RecordID(collection: "groups", id: "editors"))
    }

    @Test(
        "Collection permissions: reading to authenticated shows every record to every user; writing to a group lets its members change anyone's"
    )
    func collectionPermissions() async throws {
        let team = try await Self.team()
        let context = ModelContext()
        let byAlice = try await Self.saveWriter("By Alice", through: team.alice, in: context)
        let byCarol = try await Self.saveWriter("By Carol", through: team.carol, in: context)
        try await team.admin.createGroup("moderators", members: [.user(team.name(team.bob))])
        let wanted = Permissions(read: [.authenticated], write: [.group("moderators")], create: [.authenticated])
        try await team.admin.setPermissions(wanted, of: Writer.self)
        var expected = wanted
        expected.write.insert(.user(team.name(team.admin)))
        #expect(try await team.admin.permissions(of: Writer.self) == expected)

        // Everyone logged in reads and queries both; only the moderator and each creator write.
        for (id, creator) in [(try #require(byAlice.objectId), team.alice), (try #require(byCarol.objectId), team.carol)] {
            for user in [team.alice, team.bob, team.carol] {
                let writes = user === creator || user === team.bob
                #expect(
                    try await Self.access(id, through: user) == Self.Access(read: true, query: true, write: writes),
                    "\(team.name(user)) on \(id)")
            }
        }
        // A user cannot change the collection's permissions.
        let refused = await #expect(throws: ServiceError.self) {
            try await team.alice.setPermissions(Permissions(read: [.everyone]), of: Writer.self)
        }
        #expect(refused?.code == .forbidden)
        #expect(try await team.admin.permissions(of: Writer.self) == expected)
        // The moderator deletes Carol's record.
        #expect(try await Self.access(try #require(byCarol.objectId), through: team.bob, tryWrite: false, tryDelete: true).delete)
    }

    @Test("Setting permissions after another client changed the record is a conflict, and the record and context are unchanged")
    func permissionsConflict() async throws {
        let team = try await Self.team()
        let context = ModelContext()
        let writer = try await Self.saveWriter("Mine", through: team.alice, in: context)
        let elsewhere = ModelContext()
        let theirs = Writer.instance(objectId: try #require(writer.objectId), in: elsewhere)
        try await team.alice.fetch(theirs)
        theirs.name = "Changed elsewhere"
        try await team.alice.save(theirs)

        let error = await #expect(throws: ServiceError.self) {
            try await team.alice.setPermissions(Permissions(read: [.everyone]), of: writer)
        }
        #expect(error?.code == .conflict)
        #expect(try await team.alice.permissions(of: writer).read.isEmpty)
        // The context still has the old version: its save is the conflict it was before.
        writer.name = "Mine, changed"
        let save = await #expect(throws: ServiceError.self) { try await team.alice.save(writer) }
        #expect(save?.code == .conflict)
        try await team.alice.fetch(writer)
        try await team.alice.setPermissions(Permissions(read: [.everyone]), of: writer)
        #expect(try await team.alice.permissions(of: writer).read == [.everyone])
    }

    @Test("Bad input is refused before anything is sent: create on a record, bad names, a group inside a group, an unsaved model")
    func badInput() async throws {
        let team = try await Self.team()
        let context = ModelContext()
        let writer = try await Self.saveWriter("Mine", through: team.alice, in: context)
        let before = team.alice.metrics.requests
        let attempts: [(String, () async throws(ServiceError) -> Void)] = [
            (
                "create on a record",
                { () async throws(ServiceError) in
                    try await team.alice.setPermissions(Permissions(create: [.everyone]), of: writer)
                }
            ),
            (
                "a bad user name",
                { () async throws(ServiceError) in
                    try await team.alice.setPermissions(Permissions(read: [.user("no spaces")]), of: writer)
                }
            ),
            (
                "a bad group name",
                { () async throws(ServiceError) in
                    try await team.alice.setPermissions(Permissions(read: [.group("a/b")]), of: writer)
                }
            ),
            (
                "an empty principal",
                { () async throws(ServiceError) in
                    try await team.alice.setPermissions(Permissions(read: [.other("")]), of: writer)
                }
            ),
            (
                "a bad collection",
                { () async throws(ServiceError) in
                    try await team.alice.setPermissions(Permissions(), ofCollection: "../x")
                }
            ),
            (
                "a group inside a group",
                { () async throws(ServiceError) in
                    try await team.alice.createGroup("outer", members: [.group("inner")])
                }
            ),
            ("a bad group", { () async throws(ServiceError) in try await team.alice.createGroup("", members: []) }),
            (
                "everyone as a member",
                { () async throws(ServiceError) in
                    try await team.alice.createGroup("all", members: [.user("ann"), .everyone])
                }
            ),
            (
                "an unsaved model",
                { () async throws(ServiceError) in
                    try await team.alice.setPermissions(Permissions(), of: Writer.instance(in: context))
                }
            ),
        ]
        for (what, attempt) in attempts {
            let error = await #expect(throws: ServiceError.self, "\(what)") { try await attempt() }
            #expect(error?.code == .invalidModel, "\(what): \(String(describing: error))")
        }
        #expect(team.alice.metrics.requests == before)
        #expect(try await team.alice.permissions(of: writer) == Permissions(write: [.user(team.name(team.alice))]))

        // A group that exists is a conflict; one that does not, notFound.
        try await team.admin.createGroup("taken", members: [])
        let taken = await #expect(throws: ServiceError.self) {
            try await team.admin.createGroup("taken", members: [.user("someone")])
        }
        #expect(taken?.code == .conflict)
        #expect(try await team.admin.members(ofGroup: "taken").isEmpty)
        let missing = await #expect(throws: ServiceError.self) {
            try await team.admin.addMembers([.everyone], toGroup: "missing")
        }
        #expect(missing?.code == .notFound)
    }

    @Test("Principals read back as written, and Kinto's other principals pass through unchanged")
    func principalSpelling() {
        for principal: Principal in [.everyone, .authenticated, .user("ann"), .group("eds"), .other("/buckets/x/groups/y")] {
            let text = KintoService.kintoPrincipal(principal, bucketId: "b1")
            #expect(KintoService.principal(text, bucketId: "b1") == principal, "\(text)")
        }
        #expect(KintoService.kintoPrincipal(.group("eds"), bucketId: "b1") == "/buckets/b1/groups/eds")
        #expect(KintoService.principal("/buckets/b1/groups/eds/x", bucketId: "b1") == .other("/buckets/b1/groups/eds/x"))
        #expect(KintoService.principal("ldap:ann", bucketId: "b1") == .other("ldap:ann"))
    }
}

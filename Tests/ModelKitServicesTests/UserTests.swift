import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

#if canImport(Glibc)
    import Glibc
#endif

/// A user type with the app's own profile properties (the seed's MKitParseUser subclass).
final class Subscriber: ModelObject<Subscriber.Properties>, RemoteUser {
    struct Properties: ModelProperties {
        var email = ""
        var displayName = ""
        var age = 0
        var joined: Date?
    }
}

/// Users against the real Kinto server of KintoFixture.swift. Every test signs up users of its own
/// (`t-<uuid>`), so the tests run in parallel on one server.
@Suite("Users on a real server", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct UserTests {
    static func server() async throws -> KintoServer {
        let server = try await KintoServer.shared.value
        try ModelRegistry.register(Subscriber.self)
        return server
    }

    static func uniqueName() -> String { "t-" + UUID().uuidString.lowercased() }

    static func service(
        bucket: String = "default", store: any CredentialStore = InMemoryCredentialStore()
    ) async throws -> KintoService {
        try KintoService(url: try await server().url, bucket: bucket, credentialStore: store, timeout: .seconds(120))
    }

    /// Signs up a new member on `service` and returns it with its credentials.
    static func signUp(
        on service: KintoService, in context: ModelContext, displayName: String = "Someone"
    ) async throws -> (Subscriber, Credentials) {
        let user = Subscriber.instance(in: context)
        user.displayName = displayName
        let credentials = Credentials(username: uniqueName(), password: "pw " + UUID().uuidString.prefix(8))
        try await user.signUp(username: credentials.username, password: credentials.password, using: service)
        return (user, credentials)
    }

    /// A request made by hand with `credentials` (another client).
    static func request(
        _ method: String, _ path: String, as credentials: Credentials?, body: ModelValue? = nil, headers: [String: String] = [:]
    ) async throws -> (status: Int, body: ModelValue) {
        var headers = headers
        if let credentials {
            headers["Authorization"] =
                "Basic " + Data("\(credentials.username):\(credentials.password)".utf8).base64EncodedString()
        }
        return try await server().request(method, path, body: body, headers: headers, authenticated: false)
    }

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent(
            "modelkit-credentials-\(UUID().uuidString)", isDirectory: true)
    }

    // MARK: Sign-up and log-in

    @Test("Signing up logs in, and the profile's properties come back on a log-in through another service")
    func signUpRoundTrip() async throws {
        let store = InMemoryCredentialStore()
        let service = try await Self.service(store: store)
        let context = ModelContext()
        let user = Subscriber.instance(in: context)
        user.email = "bob@example.org"
        user.displayName = "Bob"
        user.age = 42
        user.joined = Date(timeIntervalSince1970: 1_700_000_000.5)
        let name = Self.uniqueName()
        try await user.signUp(username: name, password: "s3cret", using: service)

        #expect(user.objectId == name)
        #expect(user.modelState == .loaded)
        #expect(!user.hasChanges)
        #expect(service.user == name)
        #expect(service.credentials == Credentials(username: name, password: "s3cret"))
        #expect(store.load(key: service.credentialKey) == Credentials(username: name, password: "s3cret"))
        #expect(Subscriber.currentUser(in: context, using: service) === user)
        #expect(service.storeIdentifier.hasSuffix("user=\(name)"))

        let other = try await Self.service()
        let otherContext = ModelContext()
        let copy = try await Subscriber.logIn(username: name, password: "s3cret", in: otherContext, using: other)
        #expect(copy.modelState == .loaded)
        #expect(copy.objectId == name)
        #expect(copy.email == "bob@example.org")
        #expect(copy.displayName == "Bob")
        #expect(copy.age == 42)
        #expect(copy.joined == user.joined)
        #expect(otherContext.count == 1)

        // The profile is an ordinary record of the user's: a change saved by one is fetched by the other.
        user.displayName = "Bobby"
        try await service.save(user)
        try await other.fetch(copy)
        #expect(copy.displayName == "Bobby")
        // Logging in again updates the context's instance in place.
        let again = try await Subscriber.logIn(username: name, password: "s3cret", in: otherContext, using: other)
        #expect(again === copy)
    }

    @Test("A taken username is usernameTaken, and the user, the service and its store are as before")
    func usernameTaken() async throws {
        let keep = ModelContext()
        let checkerContext = ModelContext()
        let (_, taken) = try await Self.signUp(on: try await Self.service(), in: keep, displayName: "First")

        let store = InMemoryCredentialStore()
        let service = try await Self.service(store: store)
        let (_, mine) = try await Self.signUp(on: service, in: keep)
        let context = ModelContext()
        let impostor = Subscriber.instance(in: context)
        impostor.displayName = "Impostor"
        let error = await #expect(throws: ServiceError.self) {
            try await impostor.signUp(username: taken.username, password: "other password", using: service)
        }
        #expect(error?.code == .usernameTaken)
        #expect(error?.description.contains(taken.username) == true)
        #expect(impostor.objectId == nil)
        #expect(impostor.modelState == .new)
        #expect(impostor.hasChanges)
        #expect(impostor.displayName == "Impostor")
        #expect(service.credentials == mine)
        #expect(store.load(key: service.credentialKey) == mine)

        // The first account is untouched: its password works, the impostor's does not.
        let checker = try await Self.service()
        try await checker.verify(taken)
        let wrong = await #expect(throws: ServiceError.self) {
            try await checker.verify(Credentials(username: taken.username, password: "other password"))
        }
        #expect(wrong?.code == .unauthorized)
        let first = try await Subscriber.logIn(
            username: taken.username, password: taken.password, in: checkerContext, using: checker)
        #expect(first.displayName == "First")
    }

    @Test("Log-in with the right password returns the user; a wrong one or an unknown user is unauthorized and changes nothing")
    func logIn() async throws {
        let keep = ModelContext()
        let (_, credentials) = try await Self.signUp(on: try await Self.service(), in: keep, displayName: "Ann")
        let store = InMemoryCredentialStore()
        let service = try await Self.service(store: store)
        let context = ModelContext()

        for (name, password) in [(credentials.username, "wrong"), (Self.uniqueName(), "whatever"), (credentials.username, "")] {
            let error = await #expect(throws: ServiceError.self) {
                _ = try await Subscriber.logIn(username: name, password: password, in: context, using: service)
            }
            #expect(error?.code == .unauthorized, "\(name) / '\(password)': \(String(describing: error))")
            #expect(service.credentials == nil)
            #expect(store.load(key: service.credentialKey) == nil)
            #expect(context.count == 0)
            #expect(Subscriber.currentUser(in: context, using: service) == nil)
        }
        let invalid = await #expect(throws: ServiceError.self) {
            _ = try await Subscriber.logIn(username: "no spaces/or slashes", password: "x", in: context, using: service)
        }
        #expect(invalid?.code == .invalidModel)

        let user = try await Subscriber.logIn(
            username: credentials.username, password: credentials.password, in: context, using: service)
        #expect(user.displayName == "Ann")
        #expect(user.modelState == .loaded)
        #expect(service.credentials == credentials)
        #expect(store.load(key: service.credentialKey) == credentials)
        #expect(Subscriber.currentUser(in: context, using: service) === user)

        // A wrong password for another user afterwards leaves the logged-in one in place.
        _ = await #expect(throws: ServiceError.self) {
            _ = try await Subscriber.logIn(username: credentials.username, password: "wrong", in: context, using: service)
        }
        #expect(service.credentials == credentials)
    }

    @Test("Logging in to an account with no profile record gives a placeholder, which a save creates")
    func logInWithoutProfile() async throws {
        // An account made by another client, without a profile.
        let name = Self.uniqueName()
        let made = try await Self.request("PUT", "/accounts/\(name)", as: nil, body: ["data": ["password": "pw"]])
        #expect(made.status == 201)
        let service = try await Self.service()
        let context = ModelContext()
        let user = try await Subscriber.logIn(username: name, password: "pw", in: context, using: service)
        #expect(user.objectId == name)
        #expect(user.modelState == .needsData)
        #expect(service.user == name)

        user.displayName = "Late"
        try await service.save(user)
        #expect(user.modelState == .loaded)
        let other = ModelContext()
        let copy = try await Subscriber.logIn(username: name, password: "pw", in: other, using: try await Self.service())
        #expect(copy.modelState == .loaded)
        #expect(copy.displayName == "Late")
    }

    @Test("Sign-up refuses a bad username, an empty password and a loaded user before creating an account")
    func signUpRefusesBadInput() async throws {
        let service = try await Self.service()
        let context = ModelContext()
        let user = Subscriber.instance(in: context)
        user.displayName = "Eve"
        for (name, password) in [("bad name", "pw"), ("_leading", "pw"), ("", "pw"), ("e\u{301}", "pw"), (Self.uniqueName(), "")]
        {
            let error = await #expect(throws: ServiceError.self) {
                try await user.signUp(username: name, password: password, using: service)
            }
            #expect(error?.code == .invalidModel, "'\(name)': \(String(describing: error))")
            #expect(user.objectId == nil)
            #expect(user.modelState == .new)
            #expect(service.credentials == nil)
        }
        // The empty-password name was not created.
        let unknown = Self.uniqueName()
        _ = await #expect(throws: ServiceError.self) { try await user.signUp(username: unknown, password: "", using: service) }
        let check = await #expect(throws: ServiceError.self) {
            try await service.verify(Credentials(username: unknown, password: "x"))
        }
        #expect(check?.code == .unauthorized)

        // A user with another object id, or one loaded from the server, is not a new user.
        user.objectId = "someone-else"
        let other = await #expect(throws: ServiceError.self) {
            try await user.signUp(username: Self.uniqueName(), password: "pw", using: service)
        }
        #expect(other?.code == .invalidModel)
        #expect(user.objectId == "someone-else")
        let keep = ModelContext()
        let (signedUp, _) = try await Self.signUp(on: service, in: keep)
        let loaded = await #expect(throws: ServiceError.self) {
            try await signedUp.signUp(username: Self.uniqueName(), password: "pw", using: service)
        }
        #expect(loaded?.code == .invalidModel)
    }

    @Test("A sign-up whose profile cannot be saved deletes the account again and leaves the service as before")
    func signUpRollsBack() async throws {
        // A bucket with no collection for Subscriber: the profile save is refused after the account exists.
        let server = try await Self.server()
        let bucket = "b" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let made = try await server.request("PUT", "/buckets/\(bucket)", body: ["data": [:]], headers: ["If-None-Match": "*"])
        #expect(made.status == 201)
        let store = InMemoryCredentialStore()
        let service = try await Self.service(bucket: bucket, store: store)
        let context = ModelContext()
        let user = Subscriber.instance(in: context)
        user.displayName = "Lost"
        let name = Self.uniqueName()
        let error = await #expect(throws: ServiceError.self) {
            try await user.signUp(username: name, password: "pw", using: service)
        }
        #expect(error?.code == .forbidden || error?.code == .notFound, "\(String(describing: error))")
        #expect(user.objectId == nil)
        #expect(user.modelState == .new)
        #expect(user.displayName == "Lost")
        #expect(service.credentials == nil)
        #expect(store.load(key: service.credentialKey) == nil)
        let gone = await #expect(throws: ServiceError.self) {
            try await service.verify(Credentials(username: name, password: "pw"))
        }
        #expect(gone?.code == .unauthorized)

        // The name is free again: the same sign-up in the personal bucket works.
        let personal = try await Self.service()
        try await user.signUp(username: name, password: "pw", using: personal)
        #expect(user.objectId == name)
    }

    // MARK: Staying logged in

    @Test("A new service restores the current user from the same file store (a relaunch), and has none after a log-out")
    func relaunch() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await Self.service(store: FileCredentialStore(directory: directory))
        let keep = ModelContext()
        let (_, credentials) = try await Self.signUp(on: first, in: keep, displayName: "Relaunched")

        // "Relaunch": a new service and context, the same directory.
        let second = try await Self.service(store: FileCredentialStore(directory: directory))
        #expect(second.credentials == credentials)
        let context = ModelContext()
        let current = try #require(Subscriber.currentUser(in: context, using: second))
        #expect(current.objectId == credentials.username)
        #expect(current.modelState == .needsData)
        try await second.fetch(current)
        #expect(current.displayName == "Relaunched")

        // The restored service acts as the user: its records are theirs.
        let writer = Writer.instance(in: context)
        writer.name = "Restored"
        try await second.save(writer)
        let objectId = try #require(writer.objectId)
        let record = try await Self.request(
            "GET", "/buckets/default/collections/Writer/records/\(objectId)", as: credentials)
        #expect(record.status == 200)
        #expect(record.body["permissions"]?["write"] == [.string("account:\(credentials.username)")])

        try second.logOut()
        #expect(second.credentials == nil)
        #expect(Subscriber.currentUser(in: context, using: second) == nil)
        #expect(try FileCredentialStore(directory: directory).load(key: second.credentialKey) == nil)
        // Anonymous now: the personal bucket is refused.
        let refused = await #expect(throws: ServiceError.self) { try await second.fetch(writer) }
        #expect(refused?.code == .unauthorized || refused?.code == .forbidden, "\(String(describing: refused))")

        let third = try await Self.service(store: FileCredentialStore(directory: directory))
        #expect(third.credentials == nil)
        #expect(Subscriber.currentUser(in: ModelContext(), using: third) == nil)
        // The first service, made before, still acts as the user until it is told otherwise.
        #expect(first.credentials == credentials)
    }

    // MARK: Changing the password

    @Test("After a password change the old password fails, the new one works, and the store holds the new one")
    func changePassword() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCredentialStore(directory: directory)
        let service = try await Self.service(store: store)
        let keep = ModelContext()
        let checkerContext = ModelContext()
        let (user, old) = try await Self.signUp(on: service, in: keep, displayName: "Changer")

        let empty = await #expect(throws: ServiceError.self) { try await service.changePassword(to: "") }
        #expect(empty?.code == .invalidModel)
        #expect(service.credentials == old)

        try await service.changePassword(to: "brand new")
        let new = Credentials(username: old.username, password: "brand new")
        #expect(service.credentials == new)
        #expect(try store.load(key: service.credentialKey) == new)

        let checker = try await Self.service()
        let stale = await #expect(throws: ServiceError.self) { try await checker.verify(old) }
        #expect(stale?.code == .unauthorized)
        try await checker.verify(new)

        // The service goes on acting as the user with the new password.
        user.displayName = "Changed"
        try await service.save(user)
        let copy = try await Subscriber.logIn(username: new.username, password: new.password, in: checkerContext, using: checker)
        #expect(copy.displayName == "Changed")

        // A relaunch restores the new password.
        let relaunched = try await Self.service(store: FileCredentialStore(directory: directory))
        #expect(relaunched.credentials == new)

        // Nobody logged in: unauthorized, and nothing stored.
        let anonymous = try await Self.service()
        let nobody = await #expect(throws: ServiceError.self) { try await anonymous.changePassword(to: "x") }
        #expect(nobody?.code == .unauthorized)
    }

    @Test("A password change the server refuses leaves the service and the store with the old password")
    func changePasswordRefused() async throws {
        let store = InMemoryCredentialStore()
        let service = try await Self.service(store: store)
        let keep = ModelContext()
        let (_, old) = try await Self.signUp(on: service, in: keep)
        // Another client changes the password: this service's one is now wrong.
        let other = try await Self.service()
        try await other.logIn(old)
        try await other.changePassword(to: "changed elsewhere")

        let error = await #expect(throws: ServiceError.self) { try await service.changePassword(to: "mine") }
        #expect(error?.code == .unauthorized)
        #expect(service.credentials == old)
        #expect(store.load(key: service.credentialKey) == old)
        try await other.verify(Credentials(username: old.username, password: "changed elsewhere"))
    }

    @Test("A password reset on Kinto 26.5 is notSupported")
    func passwordReset() async throws {
        let service = try await Self.service()
        let error = await #expect(throws: ServiceError.self) { try await service.requestPasswordReset(email: "bob@example.org") }
        #expect(error?.code == .notSupported)
        #expect(error?.description.contains("password reset") == true)
    }

    // MARK: One user's records are not another's

    /// A bucket made by the fixture's account (its owner) where any user may create records, in
    /// collections for Writer and Subscriber: each record is its creator's.
    static func sharedBucket() async throws -> String {
        let server = try await Self.server()
        let open: ModelValue = ["record:create": ["system.Authenticated"]]
        return try await server.makeBucket(
            prefix: "s", collections: ["Writer", "Subscriber"], collectionBody: ["data": [:], "permissions": open])
    }

    /// What user B tries on user A's record `objectId` through `service` (acting as B): each
    /// attempt must be refused with one of `codes` (a save, which creates, with one of `writeCodes`).
    static func attack(
        _ objectId: String, through service: KintoService, expecting codes: Set<ServiceError.Code>,
        writeCodes: Set<ServiceError.Code>? = nil
    ) async throws {
        let context = ModelContext()
        let target = Writer.instance(objectId: objectId, in: context)
        let read = await #expect(throws: ServiceError.self) { try await service.fetch(target) }
        #expect(read.map { codes.contains($0.code) } == true, "read: \(String(describing: read))")
        #expect(target.modelState == .needsData)
        #expect(target.name == "")

        target.name = "B was here"
        let write = await #expect(throws: ServiceError.self) { try await service.save(target) }
        #expect(write.map { (writeCodes ?? codes).contains($0.code) } == true, "write: \(String(describing: write))")
        #expect(target.hasChanges)

        let delete = await #expect(throws: ServiceError.self) { try await service.delete(target) }
        #expect(delete.map { codes.contains($0.code) } == true, "delete: \(String(describing: delete))")
        #expect(target.modelContext === context)
    }

    /// Saves a new Writer through `service` and returns its object id.
    static func saveWriter(named name: String, on service: KintoService) async throws -> String {
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = name
        try await service.save(writer)
        return try #require(writer.objectId)
    }

    @Test("In a shared bucket one user cannot read, write or delete another's records, which stay unchanged")
    func isolationInSharedBucket() async throws {
        let bucket = try await Self.sharedBucket()
        let alice = try await Self.service(bucket: bucket)
        let bob = try await Self.service(bucket: bucket)
        let keep = ModelContext()
        let (aliceUser, aliceCredentials) = try await Self.signUp(on: alice, in: keep, displayName: "Alice")
        let (bobUser, bobCredentials) = try await Self.signUp(on: bob, in: keep, displayName: "Bob")
        #expect(alice.user == aliceCredentials.username)
        #expect(bob.user == bobCredentials.username)

        // Both save at once: each service acts as its own user, and each record is its writer's.
        async let savedByAlice = Self.saveWriter(named: "By Alice", on: alice)
        async let savedByBob = Self.saveWriter(named: "By Bob", on: bob)
        let (aliceId, bobId) = try await (savedByAlice, savedByBob)
        for (id, owner) in [(aliceId, aliceCredentials), (bobId, bobCredentials)] {
            let answer = try await Self.request("GET", "/buckets/\(bucket)/collections/Writer/records/\(id)", as: owner)
            #expect(answer.body["permissions"]?["write"] == [.string("account:\(owner.username)")])
        }

        let context = ModelContext()
        let record = Writer.instance(in: context)
        record.name = "Alice's"
        record.age = 30
        try await alice.save(record)
        let objectId = try #require(record.objectId)
        let path = "/buckets/\(bucket)/collections/Writer/records/\(objectId)"
        let before = try await Self.request("GET", path, as: aliceCredentials)
        #expect(before.body["permissions"]?["write"] == [.string("account:\(aliceCredentials.username)")])

        // Bob may create records in the collection, so his save (a create) fails on the existing id
        // with a conflict, not a 403.
        try await Self.attack(objectId, through: bob, expecting: [.forbidden], writeCodes: [.conflict])
        // By hand, too: a PUT and a DELETE of Bob's without preconditions.
        let put = try await Self.request("PUT", path, as: bobCredentials, body: ["data": ["name": "B was here"]])
        #expect(put.status == 403)
        let delete = try await Self.request("DELETE", path, as: bobCredentials)
        #expect(delete.status == 403)
        // Kinto 26.5 answers a create of an existing id (`If-None-Match: *`) by someone allowed to
        // create records with 412 and the existing record in `details.existing`: whoever knows a
        // record's id can read it this way. A server leak, not something a client can close;
        // Docs/Services.md warns about it. Checked here so that a server that fixes it shows up.
        let leak = try await Self.request(
            "PUT", path, as: bobCredentials, body: ["data": ["name": "B"]], headers: ["If-None-Match": "*"])
        #expect(leak.status == 412)
        #expect(leak.body["details"]?["existing"]?["name"] == "Alice's")
        // Nor can Bob read Alice's profile.
        let profile = Subscriber.instance(objectId: aliceCredentials.username, in: keep)
        let profileRead = await #expect(throws: ServiceError.self) { try await bob.fetch(profile) }
        #expect(profileRead?.code == .forbidden)

        let after = try await Self.request("GET", path, as: aliceCredentials)
        #expect(after.status == 200)
        #expect(after.body["data"] == before.body["data"])
        let aliceContext = ModelContext()
        let mine = Writer.instance(objectId: objectId, in: aliceContext)
        try await alice.fetch(mine)
        #expect(mine.name == "Alice's")
        #expect(mine.age == 30)
        // Each still acts as itself, and can change its own profile.
        aliceUser.age = 31
        bobUser.age = 32
        try await alice.save(aliceUser)
        try await bob.save(bobUser)
        #expect(!aliceUser.hasChanges && !bobUser.hasChanges)
    }

    @Test("One user cannot read, write or delete records in another's personal bucket, and sees only their own in 'default'")
    func isolationInPersonalBuckets() async throws {
        let alice = try await Self.service()
        let keep = ModelContext()
        let (_, aliceCredentials) = try await Self.signUp(on: alice, in: keep, displayName: "Alice")
        let context = ModelContext()
        let record = Writer.instance(in: context)
        record.name = "Private"
        try await alice.save(record)
        let objectId = try #require(record.objectId)

        // Alice's personal bucket by its real id, as the server names it.
        let root = try await Self.request("GET", "/", as: aliceCredentials)
        let aliceBucket = try #require(root.body["user"]?["bucket"]?.stringValue)
        let path = "/buckets/\(aliceBucket)/collections/Writer/records/\(objectId)"
        let before = try await Self.request("GET", path, as: aliceCredentials)
        #expect(before.status == 200)

        let bobDefault = try await Self.service()
        let (_, bobCredentials) = try await Self.signUp(on: bobDefault, in: keep, displayName: "Bob")
        // In Bob's own "default" the record does not exist.
        let notThere = Writer.instance(objectId: objectId, in: keep)
        let missing = await #expect(throws: ServiceError.self) { try await bobDefault.fetch(notThere) }
        #expect(missing?.code == .notFound)

        // In Alice's bucket, named by its id, Bob is refused.
        let url = try await Self.server().url
        let bob = KintoService(
            url: url, bucket: aliceBucket, user: bobCredentials.username, password: bobCredentials.password,
            timeout: .seconds(120))
        try await Self.attack(objectId, through: bob, expecting: [.forbidden])

        let after = try await Self.request("GET", path, as: aliceCredentials)
        #expect(after.status == 200)
        #expect(after.body["data"] == before.body["data"])
    }
}

/// A backend without accounts: a `ModelService` that is not a `UserService` (it hands its records
/// to a Kinto service).
final class RecordsOnlyService: ModelService {
    let base: KintoService
    init(_ base: KintoService) { self.base = base }
    var storeIdentifier: String { base.storeIdentifier }
    func perform(_ writes: [RecordWrite]) async throws(ServiceError) -> [RecordWriteResult] { try await base.perform(writes) }
    func read(_ id: RecordID) async throws(ServiceError) -> RemoteRecord { try await base.read(id) }
}

// In the serialized suite of ModelCallsTests, the only one that sets the default service.
extension ModelCallsTests {
    @Test("User calls use the default service when none is passed; none, or one without accounts, is an error")
    func usersThroughTheDefaultService() async throws {
        ModelServices.default = nil
        defer { ModelServices.default = nil }
        let context = ModelContext()
        let name = UserTests.uniqueName()
        let unset = await #expect(throws: ServiceError.self) {
            _ = try await Subscriber.logIn(username: name, password: "pw", in: context)
        }
        #expect(unset?.code == .notConfigured)
        #expect(Subscriber.currentUser(in: context) == nil)

        let service = try await UserTests.service()
        ModelServices.default = service
        let user = Subscriber.instance(in: context)
        user.displayName = "Default"
        try await user.signUp(username: name, password: "pw")
        #expect(service.user == name)
        #expect(Subscriber.currentUser(in: context) === user)
        let elsewhere = ModelContext()
        let copy = try await Subscriber.logIn(username: name, password: "pw", in: elsewhere)
        #expect(copy.displayName == "Default")
        let reset = await #expect(throws: ServiceError.self) { try await Subscriber.requestPasswordReset(email: "x@example.org") }
        #expect(reset?.code == .notSupported)

        ModelServices.default = RecordsOnlyService(service)
        let noAccounts = await #expect(throws: ServiceError.self) {
            _ = try await Subscriber.logIn(username: name, password: "pw", in: context)
        }
        #expect(noAccounts?.code == .notSupported)
        #expect(Subscriber.currentUser(in: context) == nil)
    }
}

extension UserTests {
    @MainActor
    @Test("The completion-handler forms sign up, log in and ask for a reset on the main actor")
    func completionHandlers() async throws {
        let service = try await Self.service()
        let context = ModelContext()
        let user = Subscriber.instance(in: context)
        user.displayName = "Handled"
        let name = Self.uniqueName()
        let signedUp = await withCheckedContinuation { continuation in
            user.signUpInBackground(username: name, password: "pw", using: service) { result in
                MainActor.assertIsolated()
                continuation.resume(returning: result)
            }
        }
        #expect((try? signedUp.get()) != nil)
        #expect(user.modelState == .loaded)

        let other = try await Self.service()
        // The completion-handler log-in lands in `ModelContext.current`: a context of this test's
        // own, since the serialized "Context stack" suite clears the process-wide stack while
        // this test runs (one CI run failed here with the model "removed meanwhile").
        let loggedIn = await ModelContext.withCurrent(ModelContext()) {
            await withCheckedContinuation { continuation in
                Subscriber.logInInBackground(username: name, password: "pw", using: other) { result in
                    continuation.resume(returning: result.map { $0.displayName })
                }
            }
        }
        // `get()` rather than `try?`: a failure shows its error (one run under heavy load failed
        // here after 556 s, with the reason hidden).
        #expect(try loggedIn.get() == "Handled")
        #expect(other.user == name)
        let refused = await ModelContext.withCurrent(ModelContext()) {
            await withCheckedContinuation { continuation in
                Subscriber.logInInBackground(username: name, password: "wrong", using: other) { result in
                    continuation.resume(returning: result.map { _ in () })
                }
            }
        }
        guard case .failure(let error) = refused else {
            Issue.record("a wrong password logged in")
            return
        }
        #expect(error.code == .unauthorized)

        let reset = await withCheckedContinuation { continuation in
            Subscriber.requestPasswordResetInBackground(email: "x@example.org", using: service) {
                continuation.resume(returning: $0)
            }
        }
        guard case .failure(let resetError) = reset else {
            Issue.record("a reset succeeded on Kinto 26.5")
            return
        }
        #expect(resetError.code == .notSupported)
    }
}

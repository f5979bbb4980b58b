import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

#if canImport(Glibc)
    import Glibc
#endif

/// The credential stores, on the real file system (no server needed).
@Suite("Credential stores")
struct CredentialStoreTests {
    static let alice = Credentials(username: "alice", password: "s3cret: with a colon")
    static let key = "kinto http://127.0.0.1:8888/v1"

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-store-\(UUID().uuidString)", isDirectory: true)
    }

    static func mode(_ url: URL) -> mode_t? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    static func expectInsecure(
        _ store: FileCredentialStore, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: ServiceError.self, comment, sourceLocation: sourceLocation) { try store.load(key: key) }
        #expect(error?.code == .insecureCredentialStore, comment, sourceLocation: sourceLocation)
    }

    @Test("A file store saves to a 0600 file in a 0700 directory, also under a permissive umask, and leaves no temporary file")
    func modes() throws {
        let root = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        // umask is per process and other tests run meanwhile: only values that keep the owner's
        // bits, so that nothing they create becomes unusable. 0 is the one that would leak.
        for mask: mode_t in [0o000, 0o022, 0o077] {
            let directory = root.appendingPathComponent("umask-\(mask)/nested/credentials", isDirectory: true)
            let store = FileCredentialStore(directory: directory)
            let old = umask(mask)
            defer { umask(old) }
            try store.save(Self.alice, key: Self.key)
            umask(old)
            #expect(Self.mode(directory) == 0o700, "umask \(String(mask, radix: 8))")
            #expect(Self.mode(store.fileURL(key: Self.key)) == 0o600, "umask \(String(mask, radix: 8))")
            #expect(try store.load(key: Self.key) == Self.alice)
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(names == [store.fileURL(key: Self.key).lastPathComponent])

            // A second save replaces the first, with the same modes.
            let changed = Credentials(username: "alice", password: "n3w")
            try store.save(changed, key: Self.key)
            #expect(try store.load(key: Self.key) == changed)
            #expect(Self.mode(store.fileURL(key: Self.key)) == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 1)
        }
    }

    @Test("A save closes a directory that was made open by hand")
    func closesOpenDirectory() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        #expect(chmod(directory.path, 0o755) == 0)
        let store = FileCredentialStore(directory: directory)
        Self.expectInsecure(store, "an open directory is refused before a save")
        try store.save(Self.alice, key: Self.key)
        #expect(Self.mode(directory) == 0o700)
        #expect(try store.load(key: Self.key) == Self.alice)
    }

    @Test("A file that group or others may use, or a directory open to them, is refused, also by a service made on the store")
    func refusesOpenModes() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCredentialStore(directory: directory)
        try store.save(Self.alice, key: Self.key)
        let file = store.fileURL(key: Self.key)
        for mode: mode_t in [0o640, 0o604, 0o620, 0o602, 0o610, 0o601, 0o644, 0o666] {
            #expect(chmod(file.path, mode) == 0)
            Self.expectInsecure(store, "file mode \(String(mode, radix: 8))")
        }
        // The service refuses to start with them, and says why.
        let error = #expect(throws: ServiceError.self) {
            _ = try KintoService(url: URL(string: "http://127.0.0.1:8888/v1")!, credentialStore: store)
        }
        #expect(error?.code == .insecureCredentialStore)
        #expect(error?.description.contains("mode 666") == true)

        #expect(chmod(file.path, 0o600) == 0)
        #expect(try store.load(key: Self.key) == Self.alice)
        for mode: mode_t in [0o750, 0o705, 0o770, 0o777] {
            #expect(chmod(directory.path, mode) == 0)
            Self.expectInsecure(store, "directory mode \(String(mode, radix: 8))")
        }
        #expect(chmod(directory.path, 0o700) == 0)
        #expect(try store.load(key: Self.key) == Self.alice)
    }

    @Test("Every mode of the file and of the directory: a load refuses group or other bits, and a save makes 0600 in 0700")
    func everyMode() throws {
        let directory = Self.temporaryDirectory()
        defer {
            chmod(directory.path, 0o700)
            try? FileManager.default.removeItem(at: directory)
        }
        let store = FileCredentialStore(directory: directory)
        try store.save(Self.alice, key: Self.key)
        let file = store.fileURL(key: Self.key)
        let root = getuid() == 0
        for mode: mode_t in 0...0o777 {
            #expect(chmod(file.path, mode) == 0)
            let result = Result { () throws(ServiceError) in try store.load(key: Self.key) }
            let label = "file mode \(String(mode, radix: 8))"
            if mode & 0o077 != 0 {
                #expect(result.errorCode == .insecureCredentialStore, "\(label)")
            } else if root || mode & 0o400 != 0 {
                #expect(result.value == Self.alice, "\(label)")
            } else {
                #expect(result.errorCode == .credentialStoreFailed, "\(label): the owner may not read it")
            }
            // A save replaces the file, whatever its mode, with a 0600 one.
            try store.save(Self.alice, key: Self.key)
            #expect(Self.mode(file) == 0o600, "\(label)")
        }
        for mode: mode_t in 0...0o777 {
            #expect(chmod(directory.path, mode) == 0)
            let result = Result { () throws(ServiceError) in try store.load(key: Self.key) }
            let label = "directory mode \(String(mode, radix: 8))"
            if mode & 0o077 != 0 {
                #expect(result.errorCode == .insecureCredentialStore, "\(label)")
            } else if root || mode & 0o100 != 0 {
                #expect(result.value == Self.alice, "\(label)")
            } else {
                #expect(result.errorCode == .credentialStoreFailed, "\(label): the owner may not search it")
            }
            // A save closes the directory again (its owner may always chmod it).
            try store.save(Self.alice, key: Self.key)
            #expect(Self.mode(directory) == 0o700, "\(label)")
            #expect(Self.mode(file) == 0o600, "\(label)")
        }
    }

    @Test("A symbolic link in place of the file, or something other than a file, is refused")
    func refusesLinks() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCredentialStore(directory: directory)
        try store.save(Self.alice, key: Self.key)
        let file = store.fileURL(key: Self.key)
        let elsewhere = directory.appendingPathComponent("elsewhere.json")
        #expect(rename(file.path, elsewhere.path) == 0)
        #expect(symlink(elsewhere.path, file.path) == 0)
        Self.expectInsecure(store, "a symbolic link")

        #expect(unlink(file.path) == 0)
        #expect(mkdir(file.path, 0o700) == 0)
        Self.expectInsecure(store, "a directory in place of the file")
        #expect(rmdir(file.path) == 0)
        #expect(try store.load(key: Self.key) == nil)
    }

    @Test("A file or directory of another owner is refused")
    func refusesOtherOwners() throws {
        if getuid() == 0 {
            // As root, hand a file and then the directory to 'nobody'.
            let directory = Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let store = FileCredentialStore(directory: directory)
            try store.save(Self.alice, key: Self.key)
            let file = store.fileURL(key: Self.key)
            #expect(chown(file.path, 65534, 65534) == 0)
            Self.expectInsecure(store, "a file of uid 65534")
            #expect(chown(file.path, 0, 0) == 0)
            #expect(try store.load(key: Self.key) == Self.alice)
            #expect(chown(directory.path, 65534, 65534) == 0)
            Self.expectInsecure(store, "a directory of uid 65534")
            let save = #expect(throws: ServiceError.self) { try store.save(Self.alice, key: Self.key) }
            #expect(save?.code == .insecureCredentialStore)
        } else {
            // Not root: the root directory is another owner's.
            let store = FileCredentialStore(directory: URL(fileURLWithPath: "/", isDirectory: true))
            Self.expectInsecure(store, "a directory of uid 0")
        }
    }

    @Test("A damaged file is credentialStoreFailed, and a save replaces it")
    func damagedFile() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCredentialStore(directory: directory)
        try store.save(Self.alice, key: Self.key)
        let file = store.fileURL(key: Self.key)
        for damaged in ["", "{\"key\": ", "[1, 2]", "{\"key\": \"\(Self.key)\", \"username\": 7, \"password\": \"x\"}"] {
            try Data(damaged.utf8).write(to: file)
            #expect(chmod(file.path, 0o600) == 0)
            let error = #expect(throws: ServiceError.self, "'\(damaged)'") { try store.load(key: Self.key) }
            #expect(error?.code == .credentialStoreFailed, "'\(damaged)'")
        }
        // A huge file is not read.
        try Data(count: 100_000).write(to: file)
        let huge = #expect(throws: ServiceError.self) { try store.load(key: Self.key) }
        #expect(huge?.code == .credentialStoreFailed)

        try store.save(Self.alice, key: Self.key)
        #expect(try store.load(key: Self.key) == Self.alice)
    }

    @Test("Keys have files of their own; removing forgets one, and removing nothing is no error")
    func keysAndRemoval() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileCredentialStore(directory: directory)
        #expect(try store.load(key: Self.key) == nil)  // no directory yet
        try store.remove(key: Self.key)

        let bob = Credentials(username: "bob", password: "pw")
        let longKey = "kinto https://" + String(repeating: "very-long-host.", count: 40) + "example.org/v1"
        try store.save(Self.alice, key: Self.key)
        try store.save(bob, key: longKey)
        #expect(store.fileURL(key: longKey).lastPathComponent.utf8.count < 100)
        #expect(store.fileURL(key: longKey) != store.fileURL(key: Self.key))
        #expect(store.fileURL(key: Self.key) == FileCredentialStore(directory: directory).fileURL(key: Self.key))
        #expect(try store.load(key: Self.key) == Self.alice)
        #expect(try store.load(key: longKey) == bob)
        #expect(try store.load(key: Self.key + "/") == nil)

        try store.remove(key: Self.key)
        #expect(try store.load(key: Self.key) == nil)
        #expect(try store.load(key: longKey) == bob)
        try store.remove(key: Self.key)
    }

    @Test("The in-memory store keeps credentials by key until removed")
    func inMemory() {
        let store = InMemoryCredentialStore()
        #expect(store.load(key: Self.key) == nil)
        store.save(Self.alice, key: Self.key)
        store.save(Credentials(username: "bob", password: "pw"), key: "other")
        #expect(store.load(key: Self.key) == Self.alice)
        store.remove(key: Self.key)
        #expect(store.load(key: Self.key) == nil)
        #expect(store.load(key: "other")?.username == "bob")
    }

    @Test("Credentials print without their password")
    func description() {
        #expect("\(Self.alice)" == "alice (password hidden)")
        #expect(!String(describing: [Self.alice]).contains("s3cret"))
    }

    @Test("A service on a store starts with the stored user, keyed by its server, whatever the bucket")
    func serviceRestores() throws {
        let store = InMemoryCredentialStore()
        let url = URL(string: "http://127.0.0.1:8888/v1/")!
        let first = try KintoService(url: url, credentialStore: store)
        #expect(first.credentials == nil)
        #expect(first.credentialKey == "kinto http://127.0.0.1:8888/v1")
        try first.setCredentials(Self.alice)
        #expect(store.load(key: first.credentialKey) == Self.alice)
        let second = try KintoService(url: URL(string: "http://127.0.0.1:8888/v1")!, bucket: "app", credentialStore: store)
        #expect(second.credentials == Self.alice)
        #expect(second.user == "alice")
        let otherServer = try KintoService(url: URL(string: "http://127.0.0.1:9999/v1")!, credentialStore: store)
        #expect(otherServer.credentials == nil)
        try second.logOut()
        #expect(store.load(key: first.credentialKey) == nil)
        #expect(first.credentials == Self.alice)  // each service keeps its own until told
    }
}

extension Result where Failure == ServiceError {
    var value: Success? { try? get() }
    var errorCode: ServiceError.Code? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}

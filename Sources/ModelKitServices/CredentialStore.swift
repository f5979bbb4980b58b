import Foundation
import Synchronization

/// A user's name and password on a backend.
///
/// Kinto's accounts take HTTP Basic credentials on every request, so the password itself is what a
/// service keeps while a user is logged in, and what a ``CredentialStore`` keeps across launches.
/// Its `description`, `debugDescription` and mirror leave the password out, so logging,
/// `dump(_:)` or a debugger's summary of a value does not leak it.
///
/// ```swift
/// let credentials = Credentials(username: "bob", password: "s3cret")
/// print(credentials)   // bob (password hidden)
/// dump(credentials)    // username: "bob", password: "(hidden)"
/// ```
public struct Credentials: Sendable, Hashable, CustomStringConvertible {
    /// The account name: for ``KintoService``, letters, digits, `_` and `-`, not starting with `_`
    /// or `-` (it is also the user's record id).
    public var username: String
    /// The password, as the user typed it.
    public var password: String

    /// Credentials of `username` with `password`.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    public var description: String { "\(username) (password hidden)" }
}

/// Where a service keeps the logged-in user's credentials between launches, so that the user
/// stays logged in (the seed's "logged in forever").
///
/// ModelKit offers ``FileCredentialStore`` (owner-only files, for Linux and command-line tools)
/// and ``InMemoryCredentialStore`` (for tests, and apps that ask for the password each launch).
/// An Apple app conforms a type of its own that keeps them in the Keychain (Docs/Services.md,
/// "Users", shows one). A store is called synchronously, from the service's own calls and while
/// the service holds its lock (so that the store and the service agree on the user): keep it
/// fast and thread-safe, and do not call the service from it.
///
/// ```swift
/// let service = try KintoService(url: url, credentialStore: FileCredentialStore.standard())
/// ```
public protocol CredentialStore: Sendable {
    /// The credentials saved under `key`, or `nil` when there are none.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/insecureCredentialStore`` when the
    ///   saved credentials could have been read or replaced by someone else,
    ///   ``ServiceError/Code/credentialStoreFailed`` when they cannot be read.
    func load(key: String) throws(ServiceError) -> Credentials?

    /// Saves `credentials` under `key`, replacing what was there, as a whole or not at all.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/credentialStoreFailed`` (and the store is
    ///   then as before), or ``ServiceError/Code/insecureCredentialStore``.
    func save(_ credentials: Credentials, key: String) throws(ServiceError)

    /// Forgets the credentials saved under `key`; none there is not an error.
    ///
    /// - Throws: ``ServiceError/Code/credentialStoreFailed`` when they cannot be removed.
    func remove(key: String) throws(ServiceError)
}

/// A ``CredentialStore`` in memory: nothing survives the process. For tests, and for apps that
/// ask for the password at each launch.
///
/// ```swift
/// let service = try KintoService(url: url, credentialStore: InMemoryCredentialStore())
/// ```
public final class InMemoryCredentialStore: CredentialStore {
    private let entries = Mutex<[String: Credentials]>([:])

    /// An empty store.
    public init() {}

    /// - Complexity: O(1) on average.
    public func load(key: String) -> Credentials? {
        entries.withLock { $0[key] }
    }

    /// - Complexity: O(1) on average.
    public func save(_ credentials: Credentials, key: String) {
        entries.withLock { $0[key] = credentials }
    }

    /// - Complexity: O(1) on average.
    public func remove(key: String) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    /// How many credentials the store holds (its descriptions show this, never the entries).
    var entryCount: Int { entries.withLock { $0.count } }
}

extension ServiceError {
    /// The error a credential store of the app's own (one on the Keychain, say) throws when it
    /// cannot read or write credentials: ``Code/credentialStoreFailed``.
    ///
    /// ```swift
    /// throw ServiceError.credentialStoreFailed(expected: "a Keychain item", found: "OSStatus \(status)")
    /// ```
    public static func credentialStoreFailed(expected: String, found: String) -> ServiceError {
        ServiceError(.credentialStoreFailed(expected: expected, found: found))
    }

    /// The error a credential store of the app's own throws when the saved credentials could have
    /// been read or replaced by someone else: ``Code/insecureCredentialStore``.
    public static func insecureCredentialStore(expected: String, found: String) -> ServiceError {
        ServiceError(.insecureCredentialStore(expected: expected, found: found))
    }
}

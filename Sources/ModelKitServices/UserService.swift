import Foundation
import ModelKit

/// A backend with user accounts: what an adapter implements, on top of ``ModelService``, for
/// ``RemoteUser`` models (the seed's `MKitServiceUser`).
///
/// A user service acts as one user at a time, the one whose ``credentials`` it holds: its saves,
/// fetches and deletes are that user's, with that user's permissions. Use one service per user to
/// act as several users at once. The calls here work on accounts only; the model-level calls
/// (``RemoteUser/signUp(username:password:using:isolation:)``,
/// ``RemoteUser/logIn(username:password:in:using:isolation:)``) also save or fetch the user's
/// profile record.
///
/// ```swift
/// try await service.logIn(Credentials(username: "bob", password: "s3cret"))
/// print(service.credentials?.username ?? "nobody")   // bob
/// try service.logOut()
/// ```
public protocol UserService: ModelService {
    /// The credentials the service sends, or `nil` when it acts anonymously.
    var credentials: Credentials? { get }

    /// Creates an account, without logging in.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/usernameTaken`` when an account has the
    ///   name, ``ServiceError/Code/invalidModel`` for a name the backend does not accept,
    ///   ``ServiceError/Code/notSupported`` when the backend has no accounts, and the network
    ///   and server errors.
    func createAccount(_ credentials: Credentials) async throws(ServiceError)

    /// Deletes the account of `credentials` (its records stay).
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/unauthorized`` for wrong credentials, and
    ///   the network and server errors.
    func deleteAccount(_ credentials: Credentials) async throws(ServiceError)

    /// Checks `credentials` with the server, changing nothing.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/unauthorized`` when no account has that
    ///   name and password, and the network and server errors.
    func verify(_ credentials: Credentials) async throws(ServiceError)

    /// Makes the service act as `credentials` (`nil`: anonymously) from now on, and remembers
    /// them in its credential store, if it has one, for the next launch. It does not check them
    /// with the server (``verify(_:)`` does).
    ///
    /// - Throws: ``ServiceError/Code/credentialStoreFailed`` or
    ///   ``ServiceError/Code/insecureCredentialStore`` when the store cannot save them; the
    ///   service then acts as before.
    func setCredentials(_ credentials: Credentials?) throws(ServiceError)

    /// Changes the logged-in user's password, and the credentials the service sends and stores.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/unauthorized`` when no user is logged in or
    ///   the server refuses the current password, ``ServiceError/Code/invalidModel`` for an
    ///   empty password, the store's errors, and the network and server errors. After a failure
    ///   the password, the service and the store are as before.
    func changePassword(to newPassword: String) async throws(ServiceError)

    /// Asks the server to send a password-reset message to `email`.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notSupported`` when the backend offers no
    ///   reset (Kinto 26's accounts plugin has none), and the network and server errors.
    func requestPasswordReset(email: String) async throws(ServiceError)
}

extension UserService {
    /// Checks `credentials` with the server, then acts as that user and remembers them
    /// (``verify(_:)``, then ``setCredentials(_:)``). ``RemoteUser/logIn(username:password:in:using:isolation:)``
    /// also fetches the user's profile.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/unauthorized`` for a wrong name or
    ///   password (the service then acts as before), the store's errors, and the network and
    ///   server errors.
    public func logIn(_ credentials: Credentials) async throws(ServiceError) {
        try await verify(credentials)
        try setCredentials(credentials)
    }

    /// Forgets the logged-in user, in memory and in the credential store: the service acts
    /// anonymously afterwards, and a service made at the next launch has no current user.
    ///
    /// - Throws: ``ServiceError/Code/credentialStoreFailed`` when the store cannot forget them;
    ///   the service then still acts as the user.
    public func logOut() throws(ServiceError) {
        try setCredentials(nil)
    }
}

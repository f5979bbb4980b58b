import Foundation
import ModelKit

/// A model type whose instances are users of a backend, with the app's own profile properties
/// (the seed's `MKitParseUser`, which apps subclass).
///
/// A user's ``ModelKit/Model/objectId`` is the username; its properties are a record like any
/// other ``RemoteModel``'s, in the collection named after the type, in the service's bucket. The
/// password is never a property: the ``UserService`` keeps it, and its credential store keeps it
/// across launches.
///
/// ```swift
/// final class AppUser: ModelObject<AppUser.Properties>, RemoteUser {
///     struct Properties: ModelProperties {
///         var email = ""
///         var displayName = ""
///     }
/// }
///
/// let user = AppUser.instance(in: context)
/// user.displayName = "Bob"
/// try await user.signUp(username: "bob", password: "s3cret", using: service)   // and logged in
/// ```
///
/// In Kinto's personal bucket (`default`) only the user can read the profile; to show users to
/// each other, use a shared bucket whose collection for the type others may read.
public protocol RemoteUser: RemoteModel {}

extension RemoteUser {
    /// Creates an account `username` with `password`, logs in as it, and saves this user (its
    /// profile properties, and the models it references that are new or changed) as that user.
    ///
    /// The user must be in a context, and new: made with `instance(in:)`, or a placeholder with
    /// the username as its object id that the app set values on. Its object id becomes
    /// `username`. The service then acts as the new user, and remembers the credentials in its
    /// credential store.
    ///
    /// The service is `service`, or else ``ModelServices/default``.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/usernameTaken`` when an account has the
    ///   name, ``ServiceError/Code/invalidModel`` for a name that is not letters, digits, `_`
    ///   and `-` (starting with a letter or digit), an empty password, or a user that is not new
    ///   or has another object id; the store's errors, and the network and server errors. After
    ///   a failure the user, the service and its store are as before, and an account this call
    ///   created is deleted again.
    public func signUp(
        username: String, password: String, using service: (any UserService)? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) {
        let service = try ModelServices.resolveUsers(service)
        guard modelContext != nil else {
            throw ServiceError(.invalidModel(expected: "a user in a context", found: "a \(Self.modelName) in none"))
        }
        guard modelState != .loaded else {
            throw ServiceError(
                .invalidModel(expected: "a new user", found: "a \(Self.modelName) loaded from a store or a server"))
        }
        guard objectId == nil || objectId == username else {
            throw ServiceError(
                .invalidModel(
                    expected: "a user without an object id, or with the username", found: "object id '\(objectId ?? "")'"))
        }
        let credentials = Credentials(username: username, password: password)
        try await service.createAccount(credentials)
        let previous = service.credentials
        let hadObjectId = objectId != nil
        do throws(ServiceError) {
            try service.setCredentials(credentials)
            objectId = username
            try await service.save(self)
        } catch {
            if !hadObjectId { objectId = nil }
            try? service.setCredentials(previous)
            // The account without its profile would make the name look taken to a retry.
            try? await service.deleteAccount(credentials)
            throw error
        }
    }

    /// Checks `username` and `password` with the server, acts as that user from now on (and
    /// remembers the credentials in the service's credential store), and returns the user with
    /// its profile fetched: the context's instance with that object id, updated in place, or a
    /// new one.
    ///
    /// An account whose profile record does not exist (made by another client) gives a
    /// placeholder (``ModelKit/ModelState/needsData``); set its properties and save it to create
    /// the record.
    ///
    /// ```swift
    /// let user = try await AppUser.logIn(username: "bob", password: "s3cret", in: context, using: service)
    /// print(user.displayName)   // Bob
    /// ```
    ///
    /// The service is `service`, or else ``ModelServices/default``.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/unauthorized`` for a wrong username or
    ///   password, ``ServiceError/Code/invalidModel`` for a username that cannot be one, the
    ///   store's errors, and the network and server errors. After a failure the service acts as
    ///   before and the context is unchanged.
    public static func logIn(
        username: String, password: String, in context: ModelContext, using service: (any UserService)? = nil,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) -> Self {
        let service = try ModelServices.resolveUsers(service)
        let credentials = Credentials(username: username, password: password)
        try await service.verify(credentials)
        let previous = service.credentials
        try service.setCredentials(credentials)
        let existing = context.model(Self.self, objectId: username)
        let user = existing ?? Self.instance(objectId: username, in: context)
        do throws(ServiceError) {
            try await service.fetch(user)
        } catch  where error.code == .notFound {
            return user
        } catch {
            if existing == nil { user.removeFromContext() }
            try? service.setCredentials(previous)
            throw error
        }
        return user
    }

    /// The user the service acts as (logged in now, or at an earlier launch and restored from
    /// its credential store), as the context's instance with that object id; `nil` when nobody
    /// is logged in, or when there is no such service (none passed, and no default that has
    /// users).
    ///
    /// A user not in the context yet is a placeholder (``ModelKit/ModelState/needsData``): fetch
    /// it to read its profile.
    ///
    /// ```swift
    /// if let user = AppUser.currentUser(in: context, using: service) {
    ///     try await service.fetch(user)
    /// }
    /// ```
    ///
    /// - Complexity: O(1).
    public static func currentUser(in context: ModelContext, using service: (any UserService)? = nil) -> Self? {
        guard let username = (try? ModelServices.resolveUsers(service))?.credentials?.username else { return nil }
        return instance(objectId: username, in: context)
    }

    /// ``currentUser(in:using:)`` in the main actor's ``ModelKit/ModelContext/current`` context.
    ///
    /// - Complexity: O(1).
    @MainActor public static func currentUser(using service: (any UserService)? = nil) -> Self? {
        currentUser(in: .current, using: service)
    }

    /// Asks the server to send a password-reset message to `email` (the seed's
    /// `requestPasswordResetForEmail:`), through `service` or else ``ModelServices/default``.
    ///
    /// ```swift
    /// try await AppUser.requestPasswordReset(email: "bob@example.org")
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notSupported`` when the backend offers no
    ///   reset (Kinto 26 has none), ``ServiceError/Code/notConfigured`` when there is no
    ///   service, and the network and server errors.
    public static func requestPasswordReset(email: String, using service: (any UserService)? = nil) async throws(ServiceError) {
        try await ModelServices.resolveUsers(service).requestPasswordReset(email: email)
    }
}

// The seed's completion-handler forms, for main-actor code that is not async.
extension RemoteUser {
    /// ``signUp(username:password:using:isolation:)`` in a task on the main actor, reporting to
    /// `completion` there (the seed's `signUpInBackgroundWithUserName:…`).
    ///
    /// ```swift
    /// user.signUpInBackground(username: "bob", password: "s3cret") { result in
    ///     if case .failure(let error) = result { show(error) }
    /// }
    /// ```
    ///
    /// The user must belong to a main-actor context (such as `ModelContext.current`).
    ///
    /// - Complexity: as the async call; this one returns at once.
    @MainActor
    public func signUpInBackground(
        username: String, password: String, using service: (any UserService)? = nil,
        completion: @escaping @MainActor (Result<Void, ServiceError>) -> Void = { _ in }
    ) {
        ModelServices.report(to: completion) { () throws(ServiceError) in
            try await self.signUp(username: username, password: password, using: service)
        }
    }

    /// ``logIn(username:password:in:using:isolation:)`` into the main actor's
    /// ``ModelKit/ModelContext/current`` context, in a task on the main actor, reporting the user
    /// to `completion` there (the seed's `logInInBackgroundWithUserName:…`).
    ///
    /// ```swift
    /// AppUser.logInInBackground(username: "bob", password: "s3cret") { result in
    ///     if case .success(let user) = result { greet(user) }
    /// }
    /// ```
    ///
    /// - Complexity: as the async call; this one returns at once.
    @MainActor
    public static func logInInBackground(
        username: String, password: String, using service: (any UserService)? = nil,
        completion: @escaping @MainActor (Result<Self, ServiceError>) -> Void
    ) {
        ModelServices.report(to: completion) { () throws(ServiceError) in
            try await logIn(username: username, password: password, in: .current, using: service)
        }
    }

    /// ``requestPasswordReset(email:using:)`` in a task on the main actor, reporting to
    /// `completion` there (the seed's `requestPasswordResetInBackgroundForEmail:…`).
    ///
    /// - Complexity: as the async call; this one returns at once.
    @MainActor
    public static func requestPasswordResetInBackground(
        email: String, using service: (any UserService)? = nil,
        completion: @escaping @MainActor (Result<Void, ServiceError>) -> Void = { _ in }
    ) {
        ModelServices.report(to: completion) { () throws(ServiceError) in
            try await requestPasswordReset(email: email, using: service)
        }
    }

}

extension ModelServices {
    /// `service`, or else the default one if it has users.
    static func resolveUsers(_ service: (any UserService)?) throws(ServiceError) -> any UserService {
        if let service { return service }
        guard let fallback = Self.default else { throw ServiceError(.notConfigured) }
        guard let users = fallback as? any UserService else {
            throw ServiceError(.notSupported("users (the default service, a \(type(of: fallback)), has no accounts)"))
        }
        return users
    }
}

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
    /// - Throws: ``ServiceError``: ``ServiceError/Code/usernameTaken`` when an account has the
    ///   name, ``ServiceError/Code/invalidModel`` for a name that is not letters, digits, `_`
    ///   and `-` (starting with a letter or digit), an empty password, or a user that is not new
    ///   or has another object id; the store's errors, and the network and server errors. After
    ///   a failure the user, the service and its store are as before, and an account this call
    ///   created is deleted again.
    public func signUp(
        username: String, password: String, using service: some UserService, isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) {
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
    /// - Throws: ``ServiceError``: ``ServiceError/Code/unauthorized`` for a wrong username or
    ///   password, ``ServiceError/Code/invalidModel`` for a username that cannot be one, the
    ///   store's errors, and the network and server errors. After a failure the service acts as
    ///   before and the context is unchanged.
    public static func logIn(
        username: String, password: String, in context: ModelContext, using service: some UserService,
        isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) -> Self {
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
    /// is logged in.
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
    public static func currentUser(in context: ModelContext, using service: some UserService) -> Self? {
        guard let username = service.credentials?.username else { return nil }
        return instance(objectId: username, in: context)
    }

    /// ``currentUser(in:using:)`` in the main actor's ``ModelKit/ModelContext/current`` context.
    ///
    /// - Complexity: O(1).
    @MainActor public static func currentUser(using service: some UserService) -> Self? {
        currentUser(in: .current, using: service)
    }
}

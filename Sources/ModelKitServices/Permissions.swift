import Foundation

/// Who a permission is given to (Parse's ACL entries and roles, StackMob's permissions).
///
/// ```swift
/// let editors: Set<Principal> = [.user("ann"), .group("editors")]
/// ```
public enum Principal: Hashable, Sendable, CustomStringConvertible {
    /// Anyone, logged in or not (Kinto's `system.Everyone`).
    case everyone
    /// Any logged-in user (Kinto's `system.Authenticated`).
    case authenticated
    /// The user with this username (Kinto's `account:<username>`).
    case user(String)
    /// The members of this group of the service's bucket (Kinto's `/buckets/<bucket>/groups/<name>`);
    /// see ``SharingService/createGroup(_:members:)``.
    case group(String)
    /// Another principal, as the backend spells it (a group of another bucket, another
    /// authentication's user id): read back as it is, and sent as it is.
    case other(String)

    public var description: String {
        switch self {
        case .everyone: "everyone"
        case .authenticated: "authenticated"
        case .user(let name): "user \(name)"
        case .group(let name): "group \(name)"
        case .other(let raw): raw
        }
    }
}

/// Who may read and write a record, or a whole collection (and create records in it).
///
/// Permissions add up: a user may read a record when the record, its collection or its bucket
/// gives them `read` (or `write`) through any principal they are (themselves, a group they are a
/// member of, ``Principal/authenticated``, ``Principal/everyone``).
///
/// ```swift
/// // Everyone may read this post; Ann and the editors may change or delete it.
/// try await service.setPermissions(Permissions(read: [.everyone], write: [.user("ann"), .group("editors")]), of: post)
/// ```
public struct Permissions: Hashable, Sendable {
    /// Who may read. For a collection: every record in it.
    public var read: Set<Principal>
    /// Who may change, delete and share (change the permissions of). For a collection: every
    /// record in it, and the collection itself. Writers may also read.
    public var write: Set<Principal>
    /// For a collection only: who may create records in it, each then written only by its
    /// creator unless shared. Always empty for a record.
    public var create: Set<Principal>

    /// Permissions giving these principals `read`, `write` and (for a collection) `create`.
    public init(read: Set<Principal> = [], write: Set<Principal> = [], create: Set<Principal> = []) {
        self.read = read
        self.write = write
        self.create = create
    }
}

/// A backend that shares records between users: permissions per record and per collection,
/// and groups of users to give them to (the seed's Parse ACLs and roles).
///
/// The calls here take record ids, collection names and group names; the model-level forms
/// (`permissions(of: post)`, `setPermissions(_:of: post)`, and the same with a model type for
/// its collection) find those from models, and keep the context's version of the record up to
/// date.
///
/// ```swift
/// try await service.createGroup("editors", members: [.user("ann"), .user("bob")])
/// try await service.setPermissions(Permissions(read: [.authenticated], write: [.group("editors")]), of: Post.self)
/// ```
public protocol SharingService: ModelService {
    /// Who may read and write the record. Kinto shows them only to its writers: a reader gets
    /// empty lists.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound``, ``ServiceError/Code/forbidden``,
    ///   and the network and server errors.
    /// - Complexity: One request (two for groups of a personal bucket, whose id is looked up).
    func permissions(of record: RecordID) async throws(ServiceError) -> Permissions

    /// Replaces who may read and write the record, when its version is `expected` (when given),
    /// and returns its new version: a change of permissions is a change of the record.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/conflict`` when the version is not
    ///   `expected`, ``ServiceError/Code/invalidModel`` for a `create` permission (records have
    ///   none) or a principal the backend does not take, ``ServiceError/Code/notFound``,
    ///   ``ServiceError/Code/forbidden`` without `write` permission, and the network and server
    ///   errors. The record is then unchanged.
    func setPermissions(_ permissions: Permissions, of record: RecordID, expected: RemoteVersion?) async throws(ServiceError)
        -> RemoteVersion

    /// Who may read, write and create records in the collection.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound``, ``ServiceError/Code/forbidden``,
    ///   ``ServiceError/Code/invalidModel`` for a bad name, and the network and server errors.
    /// - Complexity: One request (two for groups of a personal bucket, whose id is looked up).
    func permissions(ofCollection collection: String) async throws(ServiceError) -> Permissions

    /// Replaces who may read, write and create records in the collection; whoever sets them
    /// stays a writer.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/forbidden`` without `write` permission on
    ///   the collection, ``ServiceError/Code/notFound``, ``ServiceError/Code/invalidModel`` for a
    ///   bad name or principal, and the network and server errors. The collection is then
    ///   unchanged.
    /// - Complexity: One request.
    func setPermissions(_ permissions: Permissions, ofCollection collection: String) async throws(ServiceError)

    /// Creates a group with these members.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/conflict`` when the group exists,
    ///   ``ServiceError/Code/invalidModel`` for a name that is not letters, digits, `_` and `-`
    ///   or a group or ``Principal/everyone`` among the members (Kinto takes neither),
    ///   ``ServiceError/Code/forbidden``, and the network and server errors.
    func createGroup(_ name: String, members: Set<Principal>) async throws(ServiceError)

    /// The members of the group.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound``, ``ServiceError/Code/forbidden``,
    ///   ``ServiceError/Code/invalidModel`` for a bad name, and the network and server errors.
    /// - Complexity: One request.
    func members(ofGroup name: String) async throws(ServiceError) -> Set<Principal>

    /// Adds members to the group (those already in it stay once). A change another client made
    /// to the group in the meantime is kept: the addition is applied again on top of it.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound``, ``ServiceError/Code/forbidden``
    ///   without `write` permission on the group, ``ServiceError/Code/invalidModel`` for a bad
    ///   name or member, and the network and server errors. The group is then unchanged.
    /// - Complexity: Two requests, two more each time another client changed the group between.
    func addMembers(_ members: Set<Principal>, toGroup name: String) async throws(ServiceError)

    /// Removes members from the group (those not in it are ignored), as ``addMembers(_:toGroup:)``
    /// adds them.
    ///
    /// - Throws: The errors of ``addMembers(_:toGroup:)``.
    /// - Complexity: As ``addMembers(_:toGroup:)``.
    func removeMembers(_ members: Set<Principal>, fromGroup name: String) async throws(ServiceError)

    /// Deletes the group; the permissions given to it then give nothing. A group that is not
    /// there is not an error: the delete may have been done by an attempt whose answer was lost.
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/forbidden`` without `write` permission on
    ///   the group, ``ServiceError/Code/invalidModel`` for a bad name, and the network and server
    ///   errors.
    func deleteGroup(_ name: String) async throws(ServiceError)
}

extension SharingService {
    /// Who may read and write `model`'s record.
    ///
    /// ```swift
    /// let shared = try await service.permissions(of: post)
    /// print(shared.read.contains(.everyone))
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/invalidModel`` for a model in no context
    ///   or without an object id, ``ServiceError/Code/notFound`` before its first save, and the
    ///   network and server errors.
    /// - Complexity: One request.
    public func permissions<M: RemoteModel>(of model: M, isolation: isolated (any Actor)? = #isolation)
        async throws(ServiceError) -> Permissions
    {
        _ = try Self.context(of: model)
        return try await permissions(of: try Self.recordId(of: model))
    }

    /// Replaces who may read and write `model`'s saved record. The record must not have changed
    /// on the server since this context last saw it; afterwards the context has its new version,
    /// so the model's next save is an update as usual.
    ///
    /// ```swift
    /// try await service.save(post)
    /// try await service.setPermissions(Permissions(read: [.everyone]), of: post)
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/conflict`` when the record changed on the
    ///   server since this context saw it (fetch, then set them again),
    ///   ``ServiceError/Code/notFound`` before its first save, ``ServiceError/Code/forbidden``
    ///   without `write` permission, ``ServiceError/Code/invalidModel``, and the network and
    ///   server errors. The model, its context and the record are then unchanged.
    /// - Complexity: One request.
    public func setPermissions<M: RemoteModel>(
        _ permissions: Permissions, of model: M, isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) {
        let context = try Self.context(of: model)
        let id = try Self.recordId(of: model)
        let versions = VersionTable.of(context, store: storeIdentifier)
        let known = versions[model.modelId]
        let version = try await setPermissions(permissions, of: id, expected: known)
        // Only a version the context knew moves on: without one, the next save creates (and
        // finds the record exists, as it would have before).
        if known != nil { versions[model.modelId] = version }
    }

    /// Who may read, write and create records in the collection of `type` (its model name).
    ///
    /// ```swift
    /// print(try await service.permissions(of: Post.self).read)
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notFound`` when the collection does not
    ///   exist, ``ServiceError/Code/forbidden``, and the network and server errors.
    /// - Complexity: One request.
    public func permissions<M: RemoteModel>(of type: M.Type) async throws(ServiceError) -> Permissions {
        try await permissions(ofCollection: M.modelName)
    }

    /// Replaces who may read, write and create records in the collection of `type`.
    ///
    /// ```swift
    /// // Logged-in users read every post and write their own; editors write all of them.
    /// try await service.setPermissions(
    ///     Permissions(read: [.authenticated], write: [.group("editors")], create: [.authenticated]), of: Post.self)
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/forbidden`` without `write` permission on
    ///   the collection, ``ServiceError/Code/notFound``, ``ServiceError/Code/invalidModel``, and
    ///   the network and server errors.
    /// - Complexity: One request.
    public func setPermissions<M: RemoteModel>(_ permissions: Permissions, of type: M.Type) async throws(ServiceError) {
        try await setPermissions(permissions, ofCollection: M.modelName)
    }
}

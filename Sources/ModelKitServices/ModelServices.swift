import Synchronization

/// The service that models use when a call names none: set it once at launch (the seed's
/// `[MKitServiceManager setupService:withKeys:]`).
///
/// ```swift
/// ModelServices.default = KintoService(url: serverURL, user: "alice", password: "s3cret")
/// try await author.save()           // through the default service
/// try await author.save(using: other)   // through another one
/// ```
///
/// Apps that talk to several servers or users pass a service explicitly, to the model-level
/// calls (`save(using:)`) or by calling the service (`service.save(author)`); the default is
/// then only a convenience for the common case.
public enum ModelServices {
    private static let current = Mutex<(any ModelService)?>(nil)

    /// The default service, or `nil` before one is set.
    ///
    /// Reading and setting it are safe from any thread; a call already under way keeps the
    /// service it started with.
    ///
    /// - Complexity: O(1).
    public static var `default`: (any ModelService)? {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// `service`, or else the default one.
    static func resolve(_ service: (any ModelService)?) throws(ServiceError) -> any ModelService {
        if let service { return service }
        if let service = Self.default { return service }
        throw ServiceError(.notConfigured)
    }

    /// Runs `operation` in a main-actor task and hands its outcome to `completion` there: the
    /// seed's `…InBackground` calls, for models and users.
    @MainActor
    static func report<T>(
        to completion: @escaping @MainActor (Result<T, ServiceError>) -> Void,
        _ operation: @escaping @MainActor () async throws(ServiceError) -> T
    ) {
        Task { @MainActor in
            do throws(ServiceError) {
                completion(.success(try await operation()))
            } catch {
                completion(.failure(error))
            }
        }
    }
}

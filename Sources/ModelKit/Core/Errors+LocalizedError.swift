import Foundation

// Foundation's `localizedDescription` of an error that is not a `LocalizedError` is a generic
// "The operation could not be completed. (ModelKit.QueryError error 1.)", which is what an app
// shows when it presents the error as it is. Every ModelKit error says what happened in its
// `description`; these conformances make that the localized description too.

extension SerializationError: LocalizedError {
    /// The same text as ``description``: where, what was expected and what was found.
    public var errorDescription: String? { description }
}

extension PersistenceError: LocalizedError {
    /// The same text as ``description``: the path, the operation and the system's error.
    public var errorDescription: String? { description }
}

extension QueryError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}

extension ModelRegistryError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}

extension ChangeTrackingError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}

import Foundation

/// An error of a backend operation: what was expected and what was found, and the record it is
/// about when there is one.
///
/// After a failed fetch or delete the context and its models are exactly as before. After a failed
/// save, the models whose records it did not write keep their values and changes, and keep the
/// object ids the save gave them when it wrote some records (those may point to them);
/// ``writtenRecords`` names the records it wrote, whose models are saved.
public struct ServiceError: Error, Sendable, CustomStringConvertible {
    /// The kinds of failure, for `switch`ing on.
    public enum Code: String, Sendable, Hashable {
        /// The server could not be reached (refused, dropped, or no such host).
        case unreachable
        /// The server did not answer within the service's timeout.
        case timedOut
        /// The calling task was cancelled while the request or a wait before a retry was under
        /// way.
        case cancelled
        /// The server refused the request without valid credentials (HTTP 401).
        case unauthorized
        /// The credentials are valid but do not allow the request (HTTP 403).
        case forbidden
        /// The server asked the client to wait (HTTP 429, or 503 with `Retry-After`), and the
        /// service's retries ran out or the wait was longer than its ``RetryPolicy`` accepts;
        /// ``ServiceError/retryAfter`` says how long, when it said.
        case rateLimited
        /// The server failed (HTTP 5xx).
        case serverError
        /// The server answered with another HTTP status the operation did not expect.
        case httpStatus
        /// The record changed on the server since this context last saw it (HTTP 412).
        case conflict
        /// The record does not exist on the server (HTTP 404).
        case notFound
        /// The server's answer, or a record in it, is not what ModelKit expects.
        case invalidResponse
        /// The model cannot be sent as it is (no context, an id the server refuses, …).
        case invalidModel
        /// The write was not sent because an earlier one in the same operation failed.
        case notAttempted
        /// The backend does not offer the operation (such as a password reset without an emailer).
        case notSupported
        /// A sign-up chose a username that an account already has.
        case usernameTaken
        /// Saved credentials could have been read or replaced by someone else (a file another
        /// user owns, or one that group or others may read), so they are not used.
        case insecureCredentialStore
        /// Credentials could not be read from, or written to, the credential store.
        case credentialStoreFailed
        /// No service was passed and no default is set (``ModelServices/default``).
        case notConfigured
        /// The query cannot run: an unknown key, or a value of a kind the property cannot hold
        /// (the ``ModelKit/QueryError`` running it locally gives, in the description).
        case invalidQuery
        /// A query would decode more candidate records than its `maximumCandidates` allows
        /// (narrow it with conditions the server evaluates), or a fetch's references reach more
        /// records than its `maximumRecords` allows (fetch with a smaller `referenceDepth`).
        case queryTooBroad
        /// A sync's store holds changes not pushed yet that would be lost or sent as another
        /// user's: logging out, or syncing the store with a service of another user or server.
        case pendingChanges
        /// A file is larger than the server accepts (``ServiceError/description`` gives its limit).
        case fileTooLarge
        /// The server does not accept files of this kind (by the name's extension).
        case unsupportedFileType
        /// The server has no room for the write: a quota of the account, bucket or collection is
        /// used up, or its storage is full (HTTP 507 Insufficient Storage, what Kinto's quotas
        /// plugin answers). Not retried: the same write fails again until records or files are
        /// deleted or the quota is raised.
        case quotaExceeded
        /// A file on this device could not be read or written (the upload's source, the
        /// download's destination), or a downloaded file is not the one uploaded (its length or
        /// SHA-256 differ): nothing is left at the destination.
        case fileFailed
    }

    enum Kind: Sendable {
        case unreachable(String)
        case timedOut(String)
        case cancelled(String)
        case unauthorized(String)
        case forbidden(String)
        case rateLimited(retryAfter: Duration?, status: Int)
        case serverError(Int, String)
        case httpStatus(Int, String)
        case conflict(current: RemoteVersion?)
        case notFound
        case invalidResponse(expected: String, found: String)
        case invalidModel(expected: String, found: String)
        case notAttempted
        case notSupported(String)
        case usernameTaken(String)
        case insecureCredentialStore(expected: String, found: String)
        case credentialStoreFailed(expected: String, found: String)
        case notConfigured
        case invalidQuery(String)
        case queryTooBroad(maximum: Int)
        case tooManyReferences(maximum: Int)
        case pendingChanges(count: Int, reason: String)
        case fileTooLarge(String)
        case unsupportedFileType(String)
        case quotaExceeded(String)
        case fileFailed(expected: String, found: String)
    }

    let kind: Kind

    /// The record the error is about, if any.
    public let record: RecordID?

    /// For a failed save: the records it wrote before it failed, in the order written. They are
    /// on the server, and their models are saved in the context (their versions recorded, their
    /// changes reset); every other model of the save is as before. Empty for every other error.
    ///
    /// ```swift
    /// do {
    ///     try await service.save(author)
    /// } catch {
    ///     print("saved \(error.writtenRecords.count) records before: \(error)")
    /// }
    /// ```
    public internal(set) var writtenRecords: [RecordID] = []

    init(_ kind: Kind, record: RecordID? = nil) {
        self.kind = kind
        self.record = record
    }

    /// What kind of failure this is.
    public var code: Code {
        switch kind {
        case .unreachable: .unreachable
        case .timedOut: .timedOut
        case .cancelled: .cancelled
        case .unauthorized: .unauthorized
        case .forbidden: .forbidden
        case .rateLimited: .rateLimited
        case .serverError: .serverError
        case .httpStatus: .httpStatus
        case .conflict: .conflict
        case .notFound: .notFound
        case .invalidResponse: .invalidResponse
        case .invalidModel: .invalidModel
        case .notAttempted: .notAttempted
        case .notSupported: .notSupported
        case .usernameTaken: .usernameTaken
        case .insecureCredentialStore: .insecureCredentialStore
        case .credentialStoreFailed: .credentialStoreFailed
        case .notConfigured: .notConfigured
        case .invalidQuery: .invalidQuery
        case .queryTooBroad, .tooManyReferences: .queryTooBroad
        case .pendingChanges: .pendingChanges
        case .fileTooLarge: .fileTooLarge
        case .unsupportedFileType: .unsupportedFileType
        case .quotaExceeded: .quotaExceeded
        case .fileFailed: .fileFailed
        }
    }

    /// The HTTP status of an answer the server gave: for ``Code/httpStatus``,
    /// ``Code/serverError``, ``Code/rateLimited``, ``Code/unauthorized`` (401),
    /// ``Code/forbidden`` (403), ``Code/conflict`` (412), ``Code/notFound`` (404) and
    /// ``Code/quotaExceeded`` (507).
    public var statusCode: Int? {
        switch kind {
        case .httpStatus(let status, _), .serverError(let status, _): status
        case .rateLimited(_, let status): status
        case .unauthorized: 401
        case .forbidden: 403
        case .conflict: 412
        case .notFound: 404
        case .quotaExceeded: 507
        default: nil
        }
    }

    /// For ``Code/rateLimited``: how long the server asked the client to wait, when it said
    /// (`Retry-After`, in seconds).
    public var retryAfter: Duration? {
        if case .rateLimited(let delay, _) = kind { return delay }
        return nil
    }

    /// For a conflict: the version the server has now, when it said.
    public var serverVersion: RemoteVersion? {
        if case .conflict(let current) = kind { return current }
        return nil
    }

    /// An invalid response: at `path` in the answer (such as `responses[3].body.data.last_modified`)
    /// `expected` was expected and `found` was found.
    static func invalidResponse(at path: String, expected: String, found: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.invalidResponse(expected: "\(expected) at \(path)", found: found), record: record)
    }

    /// The same error about `record` (when it names none yet).
    func about(_ record: RecordID) -> ServiceError {
        self.record == nil ? ServiceError(kind, record: record) : self
    }

    public var description: String {
        let subject = record.map { " (\($0.collection)/\($0.id))" } ?? ""
        switch kind {
        case .unreachable(let reason):
            return "the server could not be reached\(subject): \(reason)"
        case .timedOut(let request):
            return "expected an answer in time\(subject) but found none: \(request)"
        case .cancelled(let request):
            return "cancelled\(subject): \(request)"
        case .unauthorized(let message):
            return
                "expected valid credentials\(subject) but the server refused them (HTTP 401)\(message.isEmpty ? "" : ": \(message)")"
        case .forbidden(let message):
            return
                "expected permission\(subject) but the server forbade the request (HTTP 403)\(message.isEmpty ? "" : ": \(message)")"
        case .rateLimited(let delay, let status):
            return "the server asked to wait\(subject) (HTTP \(status))" + (delay.map { ": retry after \($0)" } ?? "")
        case .serverError(let status, let message):
            return
                "expected a successful answer\(subject) but the server failed (HTTP \(status))\(message.isEmpty ? "" : ": \(message)")"
        case .httpStatus(let status, let message):
            return "expected a successful answer\(subject) but found HTTP \(status)\(message.isEmpty ? "" : ": \(message)")"
        case .conflict(let current):
            return "expected the version this context last saw\(subject) but found a newer one on the server"
                + (current.map { " (\($0.rawValue))" } ?? "")
        case .notFound:
            return "expected a record on the server\(subject) but found none"
        case .invalidResponse(let expected, let found):
            return "invalid response\(subject): expected \(expected) but found \(found)"
        case .invalidModel(let expected, let found):
            return "cannot send the model\(subject): expected \(expected) but found \(found)"
        case .notAttempted:
            return "not attempted\(subject): an earlier write of the same operation failed"
        case .notSupported(let what):
            return "not supported by this backend\(subject): \(what)"
        case .usernameTaken(let username):
            return "expected a free username but an account '\(username)' exists"
        case .insecureCredentialStore(let expected, let found):
            return "refused the saved credentials: expected \(expected) but found \(found)"
        case .credentialStoreFailed(let expected, let found):
            return "credential store: expected \(expected) but found \(found)"
        case .notConfigured:
            return "expected a service (passed, or set as ModelServices.default) but found none\(subject)"
        case .invalidQuery(let reason):
            return "the query cannot run\(subject): \(reason)"
        case .queryTooBroad(let maximum):
            return "expected at most \(maximum) candidate records\(subject) but found more: "
                + "narrow the query with conditions the server evaluates"
        case .tooManyReferences(let maximum):
            return "expected the fetch\(subject) to reach at most \(maximum) records with its references but found more: "
                + "fetch with a smaller referenceDepth or a larger maximumRecords"
        case .pendingChanges(let count, let reason):
            return "expected no changes waiting to be pushed\(subject) but found \(count): \(reason)"
        case .fileTooLarge(let message):
            return "expected a file the server accepts\(subject) but it is too large: \(message)"
        case .unsupportedFileType(let message):
            return "expected a kind of file the server accepts\(subject): \(message)"
        case .quotaExceeded(let message):
            return "expected room on the server for the write\(subject) but its quota or storage is full (HTTP 507)"
                + (message.isEmpty ? "" : ": \(message)")
        case .fileFailed(let expected, let found):
            return "file\(subject): expected \(expected) but found \(found)"
        }
    }
}

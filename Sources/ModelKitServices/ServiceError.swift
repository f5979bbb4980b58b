import Foundation

/// An error of a backend operation: what was expected and what was found, and the record it is
/// about when there is one.
///
/// After a failed save, fetch or delete the context and its models are exactly as before.
public struct ServiceError: Error, Sendable, CustomStringConvertible {
    /// The kinds of failure, for `switch`ing on.
    public enum Code: String, Sendable, Hashable {
        /// The server could not be reached, or did not answer in time.
        case unreachable
        /// The server answered with an HTTP status the operation did not expect.
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
    }

    enum Kind: Sendable {
        case unreachable(String)
        case httpStatus(Int, String)
        case conflict(current: RemoteVersion?)
        case notFound
        case invalidResponse(expected: String, found: String)
        case invalidModel(expected: String, found: String)
        case notAttempted
    }

    let kind: Kind

    /// The record the error is about, if any.
    public let record: RecordID?

    init(_ kind: Kind, record: RecordID? = nil) {
        self.kind = kind
        self.record = record
    }

    /// What kind of failure this is.
    public var code: Code {
        switch kind {
        case .unreachable: .unreachable
        case .httpStatus: .httpStatus
        case .conflict: .conflict
        case .notFound: .notFound
        case .invalidResponse: .invalidResponse
        case .invalidModel: .invalidModel
        case .notAttempted: .notAttempted
        }
    }

    /// The HTTP status, for ``Code/httpStatus``, ``Code/conflict`` (412) and ``Code/notFound`` (404).
    public var statusCode: Int? {
        switch kind {
        case .httpStatus(let status, _): status
        case .conflict: 412
        case .notFound: 404
        default: nil
        }
    }

    /// For a conflict: the version the server has now, when it said.
    public var serverVersion: RemoteVersion? {
        if case .conflict(let current) = kind { return current }
        return nil
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
        }
    }
}

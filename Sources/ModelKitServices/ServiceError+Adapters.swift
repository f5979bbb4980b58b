import Foundation

// The errors an adapter outside this module throws: one factory per code, each with the record
// the error is about when there is one. They make the same errors ModelKit's own adapter makes,
// so the model layer (which reads `code`, `record` and `serverVersion`) treats them alike.
// credentialStoreFailed and insecureCredentialStore are in CredentialStore.swift.
extension ServiceError {
    /// ``Code/unreachable``: no connection could be made, or it dropped before the whole answer
    /// came. `reason` says what happened (the transport's own words).
    ///
    /// ```swift
    /// throw ServiceError.unreachable("connection refused (db.example.org:5432)")
    /// ```
    public static func unreachable(_ reason: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.unreachable(reason), record: record)
    }

    /// ``Code/timedOut``: one attempt of `request` took longer than the adapter's time limit.
    public static func timedOut(_ request: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.timedOut(request), record: record)
    }

    /// ``Code/cancelled``: the calling task was cancelled while `request` was under way.
    ///
    /// ```swift
    /// if Task.isCancelled { throw ServiceError.cancelled("GET /notes/n1") }
    /// ```
    public static func cancelled(_ request: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.cancelled(request), record: record)
    }

    /// ``Code/unauthorized`` (status 401): no credentials, wrong ones, or nobody logged in for a
    /// user call. `message` is the server's, if it gave one.
    public static func unauthorized(message: String = "", record: RecordID? = nil) -> ServiceError {
        ServiceError(.unauthorized(message), record: record)
    }

    /// ``Code/forbidden`` (status 403): the credentials do not allow the request.
    ///
    /// ```swift
    /// guard mayRead(id) else { throw ServiceError.forbidden(record: id) }
    /// ```
    public static func forbidden(message: String = "", record: RecordID? = nil) -> ServiceError {
        ServiceError(.forbidden(message), record: record)
    }

    /// ``Code/rateLimited``: the server asked the client to wait (`statusCode`, 429 by default),
    /// for `retryAfter` when it said how long.
    public static func rateLimited(retryAfter: Duration?, statusCode: Int = 429, record: RecordID? = nil) -> ServiceError {
        ServiceError(.rateLimited(retryAfter: retryAfter, status: statusCode), record: record)
    }

    /// ``Code/serverError``: the server failed with `statusCode` (a 5xx) and `message`.
    public static func serverError(statusCode: Int, message: String = "", record: RecordID? = nil) -> ServiceError {
        ServiceError(.serverError(statusCode, message), record: record)
    }

    /// ``Code/httpStatus``: another status the operation did not expect (such as 400).
    public static func httpStatus(_ statusCode: Int, message: String = "", record: RecordID? = nil) -> ServiceError {
        ServiceError(.httpStatus(statusCode, message), record: record)
    }

    /// ``Code/quotaExceeded`` (status 507): the backend has no room for the write (a quota used
    /// up, or storage full). `message` is the server's, if it gave one.
    ///
    /// ```swift
    /// guard used + bytes <= limit else { throw ServiceError.quotaExceeded(message: "\(limit) bytes used", record: id) }
    /// ```
    public static func quotaExceeded(message: String = "", record: RecordID? = nil) -> ServiceError {
        ServiceError(.quotaExceeded(message), record: record)
    }

    /// ``Code/conflict`` (status 412): the record's version on the server is not the one the
    /// write expected, or a create found the record exists. `serverVersion` is the server's
    /// version, when known: ``ServiceError/serverVersion`` hands it to the app.
    ///
    /// ```swift
    /// guard stored.version == expected else { return .failed(.conflict(serverVersion: stored.version, record: id)) }
    /// ```
    public static func conflict(serverVersion: RemoteVersion?, record: RecordID? = nil) -> ServiceError {
        ServiceError(.conflict(current: serverVersion), record: record)
    }

    /// ``Code/notFound`` (status 404): the record does not exist.
    ///
    /// ```swift
    /// guard let stored = records[id] else { throw ServiceError.notFound(id) }
    /// ```
    public static func notFound(_ record: RecordID? = nil) -> ServiceError {
        ServiceError(.notFound, record: record)
    }

    /// ``Code/invalidResponse``: the backend's answer is not what the adapter expects. Say where
    /// in the answer in `expected` ("an integer at data.version") and what was there in `found`.
    ///
    /// ```swift
    /// throw ServiceError.invalidResponse(expected: "an integer at data.version", found: "\"yesterday\"", record: id)
    /// ```
    public static func invalidResponse(expected: String, found: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.invalidResponse(expected: expected, found: found), record: record)
    }

    /// ``Code/invalidModel``: the record cannot be sent as it is (an id or a field the backend
    /// refuses); nothing was sent.
    public static func invalidModel(expected: String, found: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.invalidModel(expected: expected, found: found), record: record)
    }

    /// ``Code/notAttempted``: the write of `record` was not sent because an earlier write of the
    /// same ``ModelService/perform(_:)`` failed.
    ///
    /// ```swift
    /// results += writes[done...].map { .failed(.notAttempted($0.record)) }
    /// ```
    public static func notAttempted(_ record: RecordID? = nil) -> ServiceError {
        ServiceError(.notAttempted, record: record)
    }

    /// ``Code/notSupported``: the backend does not offer `operation` (such as a password reset).
    public static func notSupported(_ operation: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.notSupported(operation), record: record)
    }

    /// ``Code/usernameTaken``: an account named `username` exists.
    public static func usernameTaken(_ username: String) -> ServiceError {
        ServiceError(.usernameTaken(username))
    }

    /// ``Code/notConfigured``: no service was passed and none is set as the default.
    public static func notConfigured(record: RecordID? = nil) -> ServiceError {
        ServiceError(.notConfigured, record: record)
    }

    /// ``Code/invalidQuery``: the query cannot run, for `reason`; nothing was sent.
    public static func invalidQuery(_ reason: String, record: RecordID? = nil) -> ServiceError {
        ServiceError(.invalidQuery(reason), record: record)
    }

    /// ``Code/queryTooBroad``: a query would read more than `maximum` candidate records.
    public static func queryTooBroad(maximum: Int, record: RecordID? = nil) -> ServiceError {
        ServiceError(.queryTooBroad(maximum: maximum), record: record)
    }

    /// The same error, about `record` when it names none yet: an adapter that makes an error
    /// before it knows the record (in its transport, say) names it on the way out.
    ///
    /// ```swift
    /// do { return try await send(request) } catch { throw error.naming(id) }
    /// ```
    public func naming(_ record: RecordID) -> ServiceError { about(record) }
}

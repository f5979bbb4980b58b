import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// Every type that holds a password, an Authorization header or something that reaches one has a
// custom mirror, description and debug description that leave the secret out. `description`
// alone is not enough: `dump(_:)`, `String(reflecting:)` and debuggers' summaries go through
// `debugDescription` or the default reflection, which lists every stored property.

/// What a mirror or description shows in place of a secret.
let hiddenSecret = "(hidden)"

extension Credentials: CustomDebugStringConvertible, CustomReflectable {
    /// The username, with the password left out: `Credentials(username: "bob", password: (hidden))`.
    public var debugDescription: String { "Credentials(username: \(username.debugDescription), password: \(hiddenSecret))" }

    /// The username, and the password replaced by `(hidden)`, for `dump(_:)` and debuggers.
    public var customMirror: Mirror {
        Mirror(self, children: ["username": username, "password": hiddenSecret], displayStyle: .struct)
    }
}

extension InMemoryCredentialStore: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How many credentials the store holds, never which: `InMemoryCredentialStore(1 entry)`.
    public var description: String {
        let count = entryCount
        return "InMemoryCredentialStore(\(count) \(count == 1 ? "entry" : "entries"))"
    }

    public var debugDescription: String { description }

    /// The number of entries only, for `dump(_:)` and debuggers.
    public var customMirror: Mirror { Mirror(self, children: ["entries": entryCount], displayStyle: .class) }
}

extension KintoService: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The server, bucket and user, never the password or the Authorization header:
    /// `KintoService(http://127.0.0.1:8888/v1, bucket: default, user: alice)`.
    public var description: String {
        "KintoService(\(redactedURL(baseURL)), bucket: \(bucket), user: \(user ?? "none"))"
    }

    public var debugDescription: String { description }

    /// The server, bucket, user and settings, with the credentials hidden, for `dump(_:)` and
    /// debuggers (the default reflection would reach the Authorization header through the
    /// service's account state and its transport's tasks).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "baseURL": redactedURL(baseURL), "bucket": bucket, "user": user as Any,
                "credentials": credentials == nil ? "none" : hiddenSecret, "pageSize": pageSize,
                "patternFilters": patternFilters,
            ], displayStyle: .class)
    }
}

extension AccountState: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    var description: String { "AccountState(user: \(credentials?.username ?? "none"), authorization: \(hiddenSecret))" }
    var debugDescription: String { description }
    var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "credentials": credentials as Any, "authorization": authorization == nil ? "none" : hiddenSecret,
                "store": store.map { "\(type(of: $0))" } ?? "none",
            ], displayStyle: .struct)
    }
}

extension HTTPClient: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    var description: String { "HTTPClient(timeout: \(timeout), maximumResponseBytes: \(maximumResponseBytes))" }
    var debugDescription: String { description }
    /// The settings only: the session and its tasks hold the requests, headers included.
    var customMirror: Mirror {
        Mirror(
            self, children: ["timeout": timeout, "retry": retry, "maximumResponseBytes": maximumResponseBytes],
            displayStyle: .class)
    }
}

extension HTTPClient.Request: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The method and URL: `GET http://…`.
    var description: String { "\(method) \(redactedURL(url))" }
    var debugDescription: String { description }
    var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method, "url": redactedURL(url), "headers": redactedHeaders(headers),
                "body": body.map { "\($0.count) bytes" } ?? "none", "isIdempotent": isIdempotent,
            ], displayStyle: .struct)
    }
}

extension HTTPClient.TaskBox: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    var description: String { "TaskBox(\(task.taskIdentifier))" }
    var debugDescription: String { description }
    /// Nothing of the task: its requests carry the Authorization header.
    var customMirror: Mirror { Mirror(self, children: ["taskIdentifier": task.taskIdentifier], displayStyle: .class) }
}

extension SessionDelegate: CustomReflectable {
    /// Nothing of the transfers: their tasks carry the requests' Authorization headers.
    var customMirror: Mirror { Mirror(self, children: [:], displayStyle: .class) }
}

/// `url` with the password of its user part (`http://user:password@host/`) replaced.
func redactedURL(_ url: URL) -> String {
    guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.password != nil else {
        return url.absoluteString
    }
    components.password = "hidden"
    return components.string ?? "(a URL with a password)"
}

/// `headers` with the value of each header that carries credentials replaced.
func redactedHeaders(_ headers: [String: String]) -> [String: String] {
    var shown = headers
    for name in headers.keys
    where HTTPClient.Response.sameName(name, "Authorization") || HTTPClient.Response.sameName(name, "Proxy-Authorization")
        || HTTPClient.Response.sameName(name, "Cookie")
    {
        shown[name] = hiddenSecret
    }
    return shown
}

import Foundation
import ModelKit

/// Who a ``KintoService`` acts as, and where it remembers that; guarded by the service's mutex.
struct AccountState: Sendable {
    /// The credentials sent with every request.
    var credentials: Credentials? {
        didSet {
            authorization = credentials.map { "Basic " + Data("\($0.username):\($0.password)".utf8).base64EncodedString() }
        }
    }
    /// The `Authorization` header for ``credentials``, made once rather than per request.
    private(set) var authorization: String?
    /// Where the credentials are kept across launches, if anywhere.
    var store: (any CredentialStore)?
}

// Users on Kinto's accounts plugin. Sign-up is `PUT /accounts/{name}` with `If-None-Match: *` (in
// a `/batch`, whose sub-requests take headers); log-in is `GET /` with Basic credentials, which the
// server answers with a `user` field only when they are right (a wrong password is not an error
// there); a password change is a `PATCH /accounts/{name}`. Basic authentication has no session,
// so logging out only forgets the credentials.
extension KintoService: UserService {
    /// A service that restores the user logged in at the last launch from `credentialStore`,
    /// and remembers the user who logs in or signs up through it there.
    ///
    /// ```swift
    /// let service = try KintoService(url: URL(string: "http://127.0.0.1:8888/v1")!, credentialStore: FileCredentialStore.standard)
    /// if let user = AppUser.currentUser(in: context, using: service) { try await service.fetch(user) }
    /// ```
    ///
    /// The credentials are kept under the server's URL (``credentialKey``): services of the same
    /// server and store share the user, whatever their bucket.
    ///
    /// - Parameters:
    ///   - url: The API root, ending in `/v1`.
    ///   - bucket: The bucket; by default the user's personal one.
    ///   - credentialStore: Where the logged-in user's credentials are kept.
    ///   - timeout: How long one request may take.
    /// - Throws: The store's errors: ``ServiceError/Code/insecureCredentialStore`` when the saved
    ///   credentials could have been read or replaced by someone else,
    ///   ``ServiceError/Code/credentialStoreFailed`` when they cannot be read.
    public convenience init(
        url: URL, bucket: String = "default", credentialStore: any CredentialStore, timeout: Duration = .seconds(30)
    ) throws(ServiceError) {
        self.init(url: url, bucket: bucket, timeout: timeout)
        let restored = try credentialStore.load(key: credentialKey)
        account.withLock { state in
            state.store = credentialStore
            state.credentials = restored
        }
    }

    /// The account name the service acts as, if any.
    public var user: String? { account.withLock { $0.credentials?.username } }

    /// The credentials the service sends: the logged-in user's, or `nil` (anonymous).
    public var credentials: Credentials? { account.withLock { $0.credentials } }

    /// The key of this server's credentials in the credential store: its API root.
    public var credentialKey: String {
        var url = baseURL.absoluteString
        while url.hasSuffix("/") { url.removeLast() }
        return "kinto " + url
    }

    public func setCredentials(_ credentials: Credentials?) throws(ServiceError) {
        let key = credentialKey
        // The store is written under the lock, so that it and the memory agree when two calls race.
        try account.withLock { (state: inout AccountState) throws(ServiceError) in
            if let store = state.store {
                if let credentials { try store.save(credentials, key: key) } else { try store.remove(key: key) }
            }
            state.credentials = credentials
        }
    }

    public func createAccount(_ credentials: Credentials) async throws(ServiceError) {
        try Self.checkUsername(credentials.username)
        try Self.checkPassword(credentials.password)
        let path = "/accounts/" + credentials.username
        // Anonymously: a sign-up never acts as anyone. `If-None-Match: *` makes an existing account
        // a 412 rather than a replacement (or, anonymously, an ambiguous 401).
        let request: ModelValue = [
            "requests": [
                [
                    "method": "PUT", "path": .string(path), "headers": ["If-None-Match": "*"],
                    "body": ["data": ["password": .string(credentials.password)]],
                ]
            ]
        ]
        let response = try await acting(as: nil).send("POST", path: "/batch", body: request.jsonData())
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        let answer = try Self.json(response.body, record: nil)
        guard case .array(let responses)? = answer["responses"], responses.count == 1,
            case .int(let status)? = responses[0]["status"]
        else {
            throw ServiceError(
                .invalidResponse(expected: "one response with an integer 'status'", found: Self.describe(answer["responses"])))
        }
        switch status {
        case 200, 201:
            return
        case 412:
            // A sign-up sent again after its answer was lost finds the account its first attempt
            // made: taken by us, when our password opens it.
            if response.attempts > 1, (try? await verify(credentials)) != nil { return }
            throw ServiceError(.usernameTaken(credentials.username))
        case 404:
            throw ServiceError(.notSupported("user accounts (the server has no accounts plugin)"))
        case 400:
            throw ServiceError(
                .invalidModel(
                    expected: "a username and password the server accepts",
                    found: "'\(credentials.username)': \(responses[0]["body"]?["message"]?.stringValue ?? "HTTP 400")"))
        default:
            var headers: [String: String] = [:]
            if case .object(let object)? = responses[0]["headers"] {
                for (key, value) in object { if let text = value.stringValue { headers[key] = text } }
            }
            throw Self.failure(status: Int(clamping: status), body: responses[0]["body"] ?? .null, headers: headers)
        }
    }

    public func deleteAccount(_ credentials: Credentials) async throws(ServiceError) {
        try Self.checkUsername(credentials.username)
        let response = try await acting(as: credentials).send("DELETE", path: "/accounts/" + credentials.username, body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
    }

    public func verify(_ credentials: Credentials) async throws(ServiceError) {
        try Self.checkUsername(credentials.username)
        let root = try await acting(as: credentials).root()
        // Kinto answers wrong credentials like anonymous ones: the `user` field is what tells.
        guard root["user"]?["id"]?.stringValue == "account:" + credentials.username else {
            guard case .object? = root["capabilities"]?["accounts"] else {
                throw ServiceError(.notSupported("user accounts (the server has no accounts plugin)"))
            }
            throw ServiceError(.unauthorized("wrong username or password for '\(credentials.username)'"))
        }
    }

    public func changePassword(to newPassword: String) async throws(ServiceError) {
        guard let old = credentials else { throw ServiceError(.unauthorized("no user is logged in")) }
        try Self.checkPassword(newPassword)
        let new = Credentials(username: old.username, password: newPassword)
        let store = account.withLock { $0.store }
        let key = credentialKey
        // The store first: if it cannot take the new password, the server keeps the old one.
        try store?.save(new, key: key)
        let body: ModelValue = ["data": ["password": .string(newPassword)]]
        let response: Response
        do throws(ServiceError) {
            response = try await acting(as: old).send("PATCH", path: "/accounts/" + old.username, body: body.jsonData())
            // Sent again after its answer was lost, the change meets the new password, which
            // refuses the old one: done, when the new one opens the account.
            var doneEarlier = false
            if response.status == 401, response.attempts > 1 { doneEarlier = (try? await verify(new)) != nil }
            guard response.status == 200 || doneEarlier else {
                throw Self.failure(status: response.status, body: response.body, headers: response.headers)
            }
        } catch {
            try? store?.save(old, key: key)
            throw error
        }
        // Unless another user logged in meanwhile, the service now sends the new password.
        account.withLock { state in
            if state.credentials == old { state.credentials = new }
        }
    }

    public func requestPasswordReset(email: String) async throws(ServiceError) {
        let root = try await acting(as: nil).root()
        // Kinto 26 hard-codes `validation_enabled: false`: its accounts plugin has no reset route
        // (the one Kinto 13.1 added, which needed validation and an emailer, is gone).
        guard root["capabilities"]?["accounts"]?["validation_enabled"] == .bool(true) else {
            let version = root["project_version"]?.stringValue.map { " \($0)" } ?? ""
            throw ServiceError(.notSupported("password reset (Kinto\(version) offers none without account validation)"))
        }
        guard let name = email.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])), !name.isEmpty
        else {
            throw ServiceError(.invalidModel(expected: "an email address", found: "'\(email)'"))
        }
        let response = try await acting(as: nil).send("POST", path: "/accounts/\(name)/reset-password", body: Data("{}".utf8))
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
    }

    // MARK: Helpers

    /// A service on the same server and bucket that sends `credentials`, for one call: the
    /// account calls must not depend on who this service acts as meanwhile.
    private func acting(as credentials: Credentials?) -> KintoService {
        let service = KintoService(
            url: baseURL, bucket: bucket, user: credentials?.username, password: credentials?.password,
            timeout: http.timeout, retry: http.retry, maximumResponseBytes: http.maximumResponseBytes)
        return service
    }

    /// `GET /`: the server's settings and capabilities, and who the credentials are.
    private func root() async throws(ServiceError) -> ModelValue {
        let response = try await send("GET", path: "/", body: nil)
        guard response.status == 200 else {
            throw Self.failure(status: response.status, body: response.body, headers: response.headers)
        }
        return try Self.json(response.body, record: nil)
    }

    /// A username is also the user's record id, so it follows the record id rule.
    static func checkUsername(_ username: String) throws(ServiceError) {
        guard RecordCodec.isValidId(username) else {
            throw ServiceError(
                .invalidModel(
                    expected: "a username of letters, digits, '_' and '-', starting with a letter or digit",
                    found: "'\(username)'"))
        }
    }

    static func checkPassword(_ password: String) throws(ServiceError) {
        guard !password.isEmpty else { throw ServiceError(.invalidModel(expected: "a password", found: "an empty one")) }
    }
}

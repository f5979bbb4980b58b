import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Every type that holds a password or an Authorization header, reflected (no server needed).
@Suite("Secrets stay out of dumps and debug descriptions")
struct SecretRedactionTests {
    static let password = "pa55-Wörd-9f3c"
    static let credentials = Credentials(username: "bob", password: password)
    /// The Authorization header for ``credentials``, which is as good as the password.
    static let authorization = "Basic " + Data("bob:\(password)".utf8).base64EncodedString()
    static let url = URL(string: "http://127.0.0.1:9/v1")!

    /// Everything `dump(_:)`, `String(reflecting:)`, `String(describing:)` and
    /// `debugPrint(_:)` show of `value`.
    static func shown(_ value: Any) -> String {
        var text = ""
        dump(value, to: &text, maxDepth: 12)
        text += "\n" + String(reflecting: value) + "\n" + String(describing: value) + "\n"
        debugPrint(value, to: &text)
        return text
    }

    static func expectNoSecret(_ value: Any, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = shown(value)
        #expect(!text.contains(password), comment, sourceLocation: sourceLocation)
        #expect(!text.contains(authorization.dropFirst(6)), comment, sourceLocation: sourceLocation)
    }

    @Test("Credentials show the username and hide the password")
    func credentials() {
        Self.expectNoSecret(Self.credentials, "Credentials")
        Self.expectNoSecret(Optional(Self.credentials) as Any, "Credentials?")
        Self.expectNoSecret([Self.credentials], "[Credentials]")
        #expect(Self.shown(Self.credentials).contains("bob"))
        #expect(Self.shown(Self.credentials).contains("(hidden)"))
    }

    @Test("Credential stores hide what they hold")
    func stores() throws {
        let memory = InMemoryCredentialStore()
        memory.save(Self.credentials, key: "kinto \(Self.url)")
        Self.expectNoSecret(memory, "InMemoryCredentialStore")
        #expect(Self.shown(memory).contains("1 entry"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-secrets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = FileCredentialStore(directory: directory)
        try file.save(Self.credentials, key: "kinto \(Self.url)")
        Self.expectNoSecret(file, "FileCredentialStore")
    }

    @Test("A service, its account state and its transport hide the credentials")
    func service() throws {
        let service = KintoService(url: Self.url, user: "bob", password: Self.password)
        Self.expectNoSecret(service, "KintoService(user:password:)")
        #expect(Self.shown(service).contains("bob"))
        let store = InMemoryCredentialStore()
        store.save(Self.credentials, key: "kinto http://127.0.0.1:9/v1")
        let restored = try KintoService(url: Self.url, credentialStore: store)
        #expect(restored.user == "bob")
        Self.expectNoSecret(restored, "KintoService(credentialStore:)")
        Self.expectNoSecret(service.account.withLock { $0 }, "AccountState")
        Self.expectNoSecret(service.http, "HTTPClient")
        let embedded = KintoService(url: URL(string: "http://bob:\(Self.password)@127.0.0.1:9/v1")!)
        Self.expectNoSecret(embedded, "KintoService with a password in its URL")
    }

    @Test("Requests and tasks hide their Authorization header")
    func requests() {
        let request = HTTPClient.Request(
            method: "POST", url: Self.url, headers: ["Authorization": Self.authorization, "Accept": "application/json"],
            body: Data(#"{"data":{"password":"\#(Self.password)"}}"#.utf8))
        Self.expectNoSecret(request, "HTTPClient.Request")
        #expect(Self.shown(request).contains("application/json"))
        var urlRequest = URLRequest(url: Self.url)
        urlRequest.setValue(Self.authorization, forHTTPHeaderField: "Authorization")
        // Never resumed: it only holds the request (cancelling or invalidating could trap in
        // swift-corelibs-foundation, see HTTPClient's deinit).
        let task = URLSession(configuration: .ephemeral).dataTask(with: urlRequest)
        Self.expectNoSecret(HTTPClient.TaskBox(task), "HTTPClient.TaskBox")
        Self.expectNoSecret(SessionDelegate(), "SessionDelegate")
    }
}

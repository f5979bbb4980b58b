import Foundation
import ModelKitServices

/// The account behaviours every ``ModelKitServices/UserService`` must have for
/// `RemoteUser`'s sign-up and log-in to be right on it: the checks `KintoService` passes.
///
/// Each check makes a service with the factory, acting as nobody, and works with accounts of
/// new, random names (`u-…`), so it can run against a shared server. Like
/// ``ServiceConformance``, it needs no test framework:
///
/// ```swift
/// @Test("My adapter's accounts behave as ModelKit expects", arguments: UserServiceConformance.Check.allCases)
/// func accounts(_ check: UserServiceConformance.Check) async throws {
///     try await UserServiceConformance { MyService() }.run(check)
/// }
/// ```
public struct UserServiceConformance: Sendable {
    /// One behaviour to check.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// A new account's credentials verify; a wrong password or an unknown name is
        /// `unauthorized`; verifying changes nothing.
        case createAndVerify
        /// A second account with a taken name is `usernameTaken`, and the first keeps its password.
        case usernameTaken
        /// Logging in acts as the user, logging out as nobody; a failed log-in changes nothing.
        case logInAndOut
        /// A password change makes the new password the one that verifies, and the service sends it.
        case changePassword
        /// A deleted account's credentials no longer verify.
        case deleteAccount

        public var description: String { rawValue }
    }

    private let makeService: @Sendable () async throws -> any UserService

    /// Checks on services made by `makeService`, called once per check.
    public init(makeService: @escaping @Sendable () async throws -> any UserService) {
        self.makeService = makeService
    }

    /// Runs one check on a service of its own.
    ///
    /// - Throws: ``ConformanceFailure`` naming the check, what it expected and what it found.
    /// - Complexity: A few requests.
    public func run(_ check: Check) async throws(ConformanceFailure) {
        let service: any UserService
        do {
            service = try await makeService()
        } catch {
            throw ConformanceFailure(check, expected: "a service from the factory", found: "\(error)")
        }
        try await ConformanceFailure.running(check.rawValue) { try await UserChecker(check: check, service: service).run() }
    }
}

/// Runs one ``UserServiceConformance/Check`` on one service.
struct UserChecker {
    let check: UserServiceConformance.Check
    let service: any UserService

    func run() async throws {
        switch check {
        case .createAndVerify: try await createAndVerify()
        case .usernameTaken: try await usernameTaken()
        case .logInAndOut: try await logInAndOut()
        case .changePassword: try await changePassword()
        case .deleteAccount: try await deleteAccount()
        }
    }

    func expect(_ condition: Bool, _ expected: String, found: @autoclosure () -> String) throws(ConformanceFailure) {
        if !condition { throw ConformanceFailure(check, expected: expected, found: found()) }
    }

    func expectError(
        _ code: ServiceError.Code, _ what: String, _ body: () async throws(ServiceError) -> Void
    ) async throws(ConformanceFailure) {
        do {
            try await body()
        } catch {
            try expect(error.code == code, "\(what) to fail with \(code)", found: "\(error.code): \(error)")
            return
        }
        throw ConformanceFailure(check, expected: "\(what) to fail with \(code)", found: "success")
    }

    static func newAccount() -> Credentials {
        Credentials(username: "u-" + UUID().uuidString.lowercased(), password: "pw " + UUID().uuidString.prefix(8))
    }

    func createAndVerify() async throws {
        let account = Self.newAccount()
        try await service.createAccount(account)
        try await service.verify(account)
        try expect(
            service.credentials == nil, "verify to leave the service acting as nobody",
            found: "\(String(describing: service.credentials))")
        try await expectError(.unauthorized, "a wrong password") { () async throws(ServiceError) in
            try await service.verify(Credentials(username: account.username, password: "wrong"))
        }
        try await expectError(.unauthorized, "an unknown name") { () async throws(ServiceError) in
            try await service.verify(Self.newAccount())
        }
    }

    func usernameTaken() async throws {
        let account = Self.newAccount()
        try await service.createAccount(account)
        try await expectError(.usernameTaken, "a second account of the name") { () async throws(ServiceError) in
            try await service.createAccount(Credentials(username: account.username, password: "another"))
        }
        try await service.verify(account)
    }

    func logInAndOut() async throws {
        let account = Self.newAccount()
        try await service.createAccount(account)
        try await expectError(.unauthorized, "a log-in with a wrong password") { () async throws(ServiceError) in
            try await service.logIn(Credentials(username: account.username, password: "wrong"))
        }
        try expect(
            service.credentials == nil, "a failed log-in to change nothing", found: "\(String(describing: service.credentials))")
        try await service.logIn(account)
        try expect(
            service.credentials == account, "the service to act as the user", found: "\(String(describing: service.credentials))")
        try service.logOut()
        try expect(
            service.credentials == nil, "the service to act as nobody", found: "\(String(describing: service.credentials))")
    }

    func changePassword() async throws {
        let account = Self.newAccount()
        try await service.createAccount(account)
        try await expectError(.unauthorized, "a password change with nobody logged in") { () async throws(ServiceError) in
            try await service.changePassword(to: "anything")
        }
        try await service.logIn(account)
        try await service.changePassword(to: "changed")
        let changed = Credentials(username: account.username, password: "changed")
        try expect(
            service.credentials == changed, "the service to send the new password",
            found: "\(String(describing: service.credentials))")
        try await service.verify(changed)
        try await expectError(.unauthorized, "the old password") { () async throws(ServiceError) in
            try await service.verify(account)
        }
        try service.logOut()
    }

    func deleteAccount() async throws {
        let account = Self.newAccount()
        try await service.createAccount(account)
        try await service.deleteAccount(account)
        try await expectError(.unauthorized, "the deleted account's credentials") { () async throws(ServiceError) in
            try await service.verify(account)
        }
    }
}

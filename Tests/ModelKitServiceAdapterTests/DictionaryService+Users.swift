import Foundation
import ModelKitServices

// Accounts for the dictionary adapter: passwords in the actor, the session in a mutex. Nothing is
// remembered across launches (no credential store), which UserService allows.
extension DictionaryService: UserService {
    nonisolated var credentials: Credentials? { session.withLock { $0 } }

    func createAccount(_ credentials: Credentials) async throws(ServiceError) {
        guard !credentials.username.isEmpty, !credentials.password.isEmpty else {
            throw .invalidModel(expected: "a username and a password", found: "an empty one")
        }
        guard accounts[credentials.username] == nil else { throw .usernameTaken(credentials.username) }
        accounts[credentials.username] = credentials.password
    }

    func deleteAccount(_ credentials: Credentials) async throws(ServiceError) {
        try await verify(credentials)
        accounts[credentials.username] = nil
    }

    func verify(_ credentials: Credentials) async throws(ServiceError) {
        guard accounts[credentials.username] == credentials.password else {
            throw .unauthorized(message: "no account with that name and password")
        }
    }

    nonisolated func setCredentials(_ credentials: Credentials?) throws(ServiceError) {
        session.withLock { $0 = credentials }
    }

    func changePassword(to newPassword: String) async throws(ServiceError) {
        guard let current = credentials else { throw .unauthorized(message: "nobody is logged in") }
        guard !newPassword.isEmpty else { throw .invalidModel(expected: "a password", found: "an empty one") }
        try await verify(current)
        accounts[current.username] = newPassword
        try setCredentials(Credentials(username: current.username, password: newPassword))
    }

    func requestPasswordReset(email: String) async throws(ServiceError) {
        throw .notSupported("password reset")
    }
}

import Foundation

// ModelKit's warnings: what is probably a mistake but must not stop the program (a property a
// member of Model hides, an inverse that does not match, stored data a load leaves behind). Each
// is one line on standard error, all through `ModelRegistry.warn(_:)`, so that tests can watch
// the channel in-process instead of running a child process for its standard error.

extension ModelRegistry {
    /// Writes `message` as one `ModelKit warning: …` line to standard error, and hands it to the
    /// observer tests install.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("ModelKit warning: \(message)\n".utf8))
        // Copied out of the lock: the observer is test code.
        let observer = warningObserver.withLock { $0 }
        observer?(message)
    }

    /// Called with every warning, for tests; `nil` (no one listening) otherwise.
    static let warningObserver = Locked<(@Sendable (String) -> Void)?>(nil)
}

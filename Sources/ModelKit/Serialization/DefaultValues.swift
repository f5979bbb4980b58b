import Foundation

/// The encoded properties of a default instance of each model type.
///
/// Synthesized `Decodable` conformances cannot fall back to a property's default value when the
/// data lacks its key. The decoder can: it reads the missing value from this template instead.
/// That is how a file written before a property was added still loads, with no migration.
enum DefaultValues {
    private static let cache = Locked([ObjectIdentifier: ModelValue]())

    static func of<M: Model>(_ type: M.Type) -> ModelValue? {
        let key = ObjectIdentifier(type)
        if let cached = cache.withLock({ $0[key] }) { return cached }
        // A default instance has empty references, so encoding it reaches no other model.
        guard let value = try? GraphStreamWriter.valueTree(of: M.Properties()) else { return nil }
        cache.withLock { $0[key] = value }
        return value
    }
}

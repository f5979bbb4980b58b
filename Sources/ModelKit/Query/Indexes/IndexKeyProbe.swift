import Foundation

/// Finds the string key of a key path without reflection: on a default instance, change the value
/// at the key path, encode before and after through `Codable`, and see which key changed.
enum IndexKeyProbe {
    static func key<M: Model, Value>(of keyPath: KeyPath<M.Properties, Value>, in type: M.Type) -> String? {
        // Through the stored property's offset, so that `let` properties and read-only key path
        // objects (what a key path literal becomes where a `KeyPath` is expected) work too.
        guard let offset = MemoryLayout<M.Properties>.offset(of: keyPath) else { return nil }
        var properties = M.Properties()
        guard let changed = different(from: properties[keyPath: keyPath]) else { return nil }
        guard let before = try? GraphStreamWriter.valueTree(of: properties) else { return nil }
        withUnsafeMutablePointer(to: &properties) { pointer in
            (UnsafeMutableRawPointer(pointer) + offset).assumingMemoryBound(to: Value.self).pointee = changed
        }
        guard let after = try? GraphStreamWriter.valueTree(of: properties) else { return nil }
        let paths = differences(before, after, path: [])
        return paths.count == 1 ? paths[0].joined(separator: ".") : nil
    }

    /// A value of the same type that differs from `value`, for the types indexes hold.
    private static func different<Value>(from value: Value) -> Value? {
        switch value {
        case let value as Int: return (value &+ 7_777_777) as? Value
        case let value as Int64: return (value &+ 7_777_777) as? Value
        case let value as Int32: return (value &+ 7_777_777) as? Value
        case let value as UInt64: return (value &+ 7_777_777) as? Value
        case let value as Double: return (value.isNaN ? 1 : value + 7_777_777.5) as? Value
        case let value as String: return (value + "\u{1}probe") as? Value
        case let value as Date: return value.addingTimeInterval(7_777_777) as? Value
        case let value as Bool: return (!value) as? Value
        case let value as UUID:
            return
                (value == UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))
                ? UUID() : UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))) as? Value
        default: return nil
        }
    }

    /// The paths of the leaves that differ between two encodings.
    private static func differences(_ a: ModelValue, _ b: ModelValue, path: [String]) -> [[String]] {
        guard a != b else { return [] }
        if case .object(let x) = a, case .object(let y) = b, x.keys == y.keys {
            return x.keys.flatMap { differences(x[$0]!, y[$0]!, path: path + [$0]) }
        }
        return [path]
    }
}

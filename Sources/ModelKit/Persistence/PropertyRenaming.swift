/// A model whose files may use older names for some properties.
///
/// Rename a property in `Properties` and map its new name to the old one, in one line; files
/// written before the rename load into the renamed property, and files written after it use the
/// new name:
///
/// ```swift
/// extension Author: PropertyRenaming {
///     static var renamedProperties: [String: String] { ["fullName": "name"] }   // new ← old
/// }
/// ```
///
/// A file that has the new name uses it; the old name is only looked up when the new one is
/// missing. Applies to the model's own properties (not to keys inside nested values).
public protocol PropertyRenaming: Model {
    /// Current property name → the name older files use for it.
    static var renamedProperties: [String: String] { get }
}

/// Per-type facts the decoders need for each model, cached by the source: the encoded default
/// properties, the rename map, and the keys of the properties that decoding reads.
struct ModelTypeInfo {
    let defaults: ModelValue?
    let renames: [String: String]
    /// The keys a JSON tape keeps of a model's properties (the rest is checked, not recorded);
    /// `nil`: all of them. It starts with the keys of the defaults and of the renames, and
    /// learns each key the type's `init(from:)` asks for beyond those (see ``learn(_:all:)``).
    private(set) var readKeys: [[UInt8]]?

    static func of<M: Model>(_ type: M.Type) -> ModelTypeInfo {
        let renames = (M.self as? any PropertyRenaming.Type)?.renamedProperties ?? [:]
        let defaults = DefaultValues.of(M.self)
        var keys: [String] = []
        if case .object(let object)? = defaults { keys += object.keys }
        for (new, old) in renames { keys += [new, old] }
        var readKeys: [[UInt8]] = []
        for key in keys where !readKeys.contains(Array(key.utf8)) { readKeys.append(Array(key.utf8)) }
        return ModelTypeInfo(defaults: defaults, renames: renames, readKeys: readKeys)
    }

    /// Keeps `keys` too from now on, or with `all`, every key.
    mutating func learn(_ keys: [[UInt8]], all: Bool) {
        guard !all else { return readKeys = nil }
        for key in keys where readKeys?.contains(key) == false { readKeys?.append(key) }
    }
}

/// A one-entry-per-type cache of ``ModelTypeInfo`` (loads are mostly runs of the same type).
struct ModelTypeInfoCache {
    private var last: (type: ObjectIdentifier, info: ModelTypeInfo)?
    private var all: [ObjectIdentifier: ModelTypeInfo] = [:]

    mutating func info<M: Model>(_ type: M.Type) -> ModelTypeInfo {
        let key = ObjectIdentifier(type)
        if let last, last.type == key { return last.info }
        let info = all[key] ?? ModelTypeInfo.of(type)
        all[key] = info
        last = (key, info)
        return info
    }

    /// Adds what a JSON tape had to find again for a model of `type` to the keys its tape keeps.
    mutating func learn<M: Model>(_ type: M.Type, from tape: JSONTape) {
        guard !tape.recoveredKeys.isEmpty || tape.recoveredAllMembers else { return }
        var info = info(type)
        info.learn(tape.recoveredKeys, all: tape.recoveredAllMembers)
        all[ObjectIdentifier(type)] = info
        last = (ObjectIdentifier(type), info)
    }
}

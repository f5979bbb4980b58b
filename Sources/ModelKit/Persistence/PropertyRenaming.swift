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
/// properties and the rename map.
struct ModelTypeInfo {
    let defaults: ModelValue?
    let renames: [String: String]

    static func of<M: Model>(_ type: M.Type) -> ModelTypeInfo {
        let renames = (M.self as? any PropertyRenaming.Type)?.renamedProperties ?? [:]
        return ModelTypeInfo(defaults: DefaultValues.of(M.self), renames: renames)
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
}

import Foundation

// Stored keys that a model's `Properties` does not decode: a property renamed without
// PropertyRenaming, or removed. Their values are not loaded and the next save drops them, so a
// load warns about them (or fails, or says nothing, as DeserializationOptions.unknownKeys says).
//
// They are found where the loaders already skip them. The direct fills stop at the first such
// key and leave the model to the Codable path (compact JSON never matches one, the JSON tape
// counts the members it drops, the tree and property-list fills see them), so directly filled
// models of files without unknown keys cost nothing more. The Codable path (TreeDecoder.decodeProperties) notes the keys
// `init(from:)` asks for and compares the stored keys with them once it is done: a type whose
// decoding skips a key on purpose is not blamed for it, and one that reads `allKeys` knows them all.

extension GraphLoader {
    /// Whether loads look for unknown keys at all (not with ``DeserializationOptions/UnknownKeyPolicy/ignore``).
    var checksUnknownKeys: Bool { options.unknownKeys != .ignore }

    /// Handles the unknown keys the Codable path found in the model at `index` (see
    /// ``unknownKeysOfLastDecode``): fails, or queues one warning per model type and key, shown
    /// when the load succeeds (a first pass that gives way to another loader shows none).
    func reportUnknownKeys<M: Model>(of type: M.Type, at index: Int) throws {
        let keys = unknownKeysOfLastDecode
        unknownKeysOfLastDecode = []
        let header = headers[index]
        let objectId = header.objectId.map { ", objectId \"\($0)\"" } ?? ""
        if options.unknownKeys == .fail, let key = keys.first {
            throw SerializationError(
                .unknownKey, modelIndex: index, modelName: header.name, path: "properties.\(key)",
                expected: "only keys that \(M.self).Properties decodes (map a renamed property with PropertyRenaming)",
                found: "the stored key \"\(key)\" in model \(header.id)\(objectId)")
        }
        for key in keys where !warnedUnknownKeys.contains(UnknownKey(model: header.name, key: key)) {
            warnedUnknownKeys.insert(UnknownKey(model: header.name, key: key))
            pendingWarnings.append(
                "\(header.name) (model \(header.id)\(objectId)) has a stored property \"\(key)\" that \(M.self).Properties "
                    + "does not decode: it loads with its default and the next save drops it. Map a renamed property "
                    + "with PropertyRenaming, or load with DeserializationOptions(unknownKeys: .ignore) if it was removed.")
        }
    }

    /// Shows the warnings of a load that succeeded.
    func flushWarnings() {
        for warning in pendingWarnings { ModelRegistry.warn(warning) }
        pendingWarnings = []
    }

    struct UnknownKey: Hashable {
        let model: String
        let key: String
    }
}

extension TreeDecoder {
    /// The keys of the properties object `node` that the decoding just done did not ask for
    /// (``askedKeys``), apart from the old names of renamed properties.
    ///
    /// - Complexity: O(k) string comparisons for k keys stored in the order they were asked
    ///   for (as ModelKit writes them); O(k²) at worst.
    func keysNotAskedFor() throws -> [String] {
        guard let asked = askedKeys, !readsEveryKey else { return [] }
        var unknown: [String] = []
        var position = 0
        try document.forEach(in: node) { key, _ in
            defer { position += 1 }
            if position < asked.count, try document.stringEquals(key, asked[position]) { return true }
            for name in asked where try document.stringEquals(key, name) { return true }
            for name in renames.values where try document.stringEquals(key, name) { return true }
            unknown.append(try document.string(key))
            return true
        }
        // Members the reader checked without recording them (JSON keeps only the keys a type is
        // known to read): unknown unless the decoding asked for them after all.
        for key in try document.keysLeftOut(of: node) where !asked.contains(key) && !renames.values.contains(key) {
            unknown.append(key)
        }
        return unknown
    }
}

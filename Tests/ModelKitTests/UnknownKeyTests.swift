import Foundation
import ModelKitTestSupport
import Testing

@testable import ModelKit

/// A model whose `fullName` was called `name` in older files, renamed without
/// `PropertyRenaming`. Its properties are plain, so loads fill them directly.
final class RenamedContact: ModelObject<RenamedContact.Properties> {
    struct Properties: ModelProperties, Equatable {
        var fullName = ""
        var age = 0
    }
}

/// The same mistake in a model whose optional property keeps it on the `Codable` path.
final class RenamedGadget: ModelObject<RenamedGadget.Properties> {
    struct Properties: ModelProperties, Equatable {
        var label = ""
        var serial: String? = nil
    }
}

/// The warnings ModelKit's channel gives while `body` runs, those naming `model` only (other
/// suites run at the same time).
private func warnings(about model: String, during body: () throws -> Void) rethrows -> [String] {
    let seen = Locked<[String]>([])
    ModelRegistry.warningObserver.withLock { $0 = { message in seen.withLock { $0.append(message) } } }
    defer { ModelRegistry.warningObserver.withLock { $0 = nil } }
    try body()
    return seen.withLock { $0 }.filter { $0.hasPrefix(model + " ") }
}

/// `value` (from JSONSerialization or PropertyListSerialization) with every dictionary key `old`
/// renamed to `new`.
private func renamingKeys(_ value: Any, _ old: String, to new: String) -> Any {
    if let dictionary = value as? [String: Any] {
        var result: [String: Any] = [:]
        for (key, member) in dictionary { result[key == old ? new : key] = renamingKeys(member, old, to: new) }
        return result
    }
    if let array = value as? [Any] { return array.map { renamingKeys($0, old, to: new) } }
    return value
}

@Suite("Unknown stored keys", .serialized)
struct UnknownKeyTests {
    init() throws {
        try ModelRegistry.register(RenamedContact.self, RenamedGadget.self)
    }

    /// A file of `count` contacts (or gadgets) in `format` whose first property is stored under
    /// its old name, `name`; `compact` keeps ModelKit's own JSON text (edited in place) rather
    /// than JSON rewritten by Foundation.
    func oldFile(gadgets: Bool = false, count: Int = 3, format: PersistenceFormat, compact: Bool = true) throws -> Data {
        let context = ModelContext()
        for index in 0..<count {
            if gadgets {
                let gadget = RenamedGadget.instance(objectId: "g\(index)", in: context)
                gadget.label = "Gadget \(index)"
                gadget.serial = "S\(index)"
            } else {
                let contact = RenamedContact.instance(objectId: "c\(index)", in: context)
                contact.fullName = "Ada \(index)"
                contact.age = 36
            }
        }
        let current = gadgets ? "label" : "fullName"
        if format == .json, compact {
            let text = String(decoding: try context.data(format: .json), as: UTF8.self)
            #expect(text.contains("\"\(current)\":"))
            return Data(text.replacingOccurrences(of: "\"\(current)\":", with: "\"name\":").utf8)
        }
        if format == .json {
            let tree = try JSONSerialization.jsonObject(with: try context.data(format: .json))
            return try JSONSerialization.data(withJSONObject: renamingKeys(tree, current, to: "name"), options: [.prettyPrinted])
        }
        let tree = try PropertyListSerialization.propertyList(from: try context.data(format: .binaryPropertyList), format: nil)
        return try PropertyListSerialization.data(
            fromPropertyList: renamingKeys(tree, current, to: "name"),
            format: format == .xmlPropertyList ? .xml : .binary, options: 0)
    }

    static let files: [(format: PersistenceFormat, compact: Bool)] = [
        (.json, true), (.json, false), (.binaryPropertyList, false), (.xmlPropertyList, false),
    ]

    @Test("A stored key the model does not decode warns once per type and key, in every format and load path")
    func warns() throws {
        for gadgets in [false, true] {
            let model = gadgets ? "RenamedGadget" : "RenamedContact"
            for file in Self.files {
                let data = try oldFile(gadgets: gadgets, format: file.format, compact: file.compact)
                let context = ModelContext()
                let seen = try warnings(about: model) { try context.load(data) }
                #expect(seen.count == 1, "\(model) \(file): \(seen)")
                #expect(seen.first?.contains(#"stored property "name""#) == true, "\(seen)")
                #expect(seen.first?.contains("PropertyRenaming") == true)
                #expect(context.models(of: RenamedContact.self).count + context.models(of: RenamedGadget.self).count == 3)
            }
        }
    }

    @Test("instance(fromJSON:) and instance(from:) warn too")
    func warnsForInstances() throws {
        let context = ModelContext()
        let contact = RenamedContact.instance(in: context)
        contact.fullName = "Ada"
        let text = String(decoding: try contact.jsonData(), as: UTF8.self)
        let old = Data(text.replacingOccurrences(of: "\"fullName\":", with: "\"name\":").utf8)
        let seen = try warnings(about: "RenamedContact") {
            let copy = try RenamedContact.instance(fromJSON: old, in: ModelContext())
            #expect(copy.fullName == "")
        }
        #expect(seen.count == 1)
        let tree = try ModelValue(json: old)
        let fromTree = try warnings(about: "RenamedContact") { _ = try RenamedContact.instance(from: tree, in: ModelContext()) }
        #expect(fromTree.count == 1)
    }

    @Test("With unknownKeys .fail the load stops with a typed error naming the model, its id and the key")
    func fails() throws {
        for gadgets in [false, true] {
            for file in Self.files {
                let data = try oldFile(gadgets: gadgets, format: file.format, compact: file.compact)
                let context = ModelContext()
                let kept = RenamedContact.instance(objectId: "kept", in: context)
                #expect {
                    try context.load(data, options: DeserializationOptions(unknownKeys: .fail))
                } throws: { error in
                    guard let error = error as? SerializationError else { return false }
                    return error.code == .unknownKey && error.path == "properties.name"
                        && error.modelName == (gadgets ? "RenamedGadget" : "RenamedContact") && error.modelIndex != nil
                        && error.found.contains(#""name""#) && error.found.contains("objectId \"")
                }
                // Nothing was loaded.
                #expect(context.models(of: RenamedContact.self).map(\.objectId) == [kept.objectId])
                #expect(context.models(of: RenamedGadget.self).isEmpty)
            }
        }
        let json = try oldFile(format: .json)
        #expect(throws: SerializationError.self) {
            try RenamedContact.instance(fromJSON: json, in: ModelContext(), options: DeserializationOptions(unknownKeys: .fail))
        }
    }

    @Test("Models filled on worker threads report unknown keys too")
    func parallel() throws {
        let data = try oldFile(count: 600, format: .binaryPropertyList)
        var options = DeserializationOptions(unknownKeys: .fail)
        options.parallelism = .init(minimumModels: 16, chunk: 8, workers: 2)
        #expect(throws: SerializationError.self) { try ModelContext().load(data, options: options) }
        options.unknownKeys = .warn
        let context = ModelContext()
        let seen = try warnings(about: "RenamedContact") { try context.load(data, options: options) }
        #expect(seen.count == 1)
        #expect(context.models(of: RenamedContact.self).count == 600)
    }

    @Test("With unknownKeys .ignore the load is silent, and files without unknown keys never warn")
    func silent() throws {
        for file in Self.files {
            let old = try oldFile(format: file.format, compact: file.compact)
            let seen = try warnings(about: "RenamedContact") {
                try ModelContext().load(old, options: DeserializationOptions(unknownKeys: .ignore))
            }
            #expect(seen.isEmpty)
        }
        // Current files, a nil optional left out, and a renamed property's old name.
        let context = ModelContext()
        RenamedContact.instance(in: context).fullName = "Ada"
        RenamedGadget.instance(in: context).label = "nil serial"
        for format in [PersistenceFormat.json, .binaryPropertyList, .xmlPropertyList] {
            let data = try context.data(format: format)
            let strict = DeserializationOptions(unknownKeys: .fail)
            #expect(try warnings(about: "Renamed") { try ModelContext().load(data, options: strict) }.isEmpty)
        }
        try ModelRegistry.register(Profile.self)
        let renamed = try fixture("renamed-property", "json")
        try ModelContext().load(from: renamed, options: DeserializationOptions(unknownKeys: .fail))
    }
}

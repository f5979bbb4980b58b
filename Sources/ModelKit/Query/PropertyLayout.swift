import Foundation

/// Where the simple stored properties of a model's `Properties` live in memory, learned once per
/// type through `Codable`, so that string-key conditions and sort keys read them directly instead
/// of encoding every model.
///
/// How, without reflection: a probing decoder builds a `Properties` value in which every `Int`,
/// `Int64`, `UInt`, `UInt64`, `Double`, `String`, `Date`, `[String]`, `GeoPoint` and `ModelRef`
/// property (also optional, also in nested structs) holds a value unique to its key, and notes the
/// exact type each key was decoded as. Each unique value is then looked for in the bytes of the
/// result: found exactly once, its offset is the property's. A `Bool` can't hold a unique value,
/// so each one is found by decoding again with only that key set to `true` and seeing which byte
/// changes. The result is checked by encoding it: every located key must encode to its unique
/// value (a reference, which encodes only inside a context, is checked by reading it back). Keys
/// that don't pass (custom coding, enums, classes, anything else) are simply read by encoding.
// Unchecked only for `Reference.type`, a metatype: every stored property is a `let` set once
// when the layout is built, and a metatype is immutable, but before `SendableMetatype` (Swift
// 6.2, newer than the package's minimum toolchain) the compiler cannot see that.
struct PropertyLayout: @unchecked Sendable {
    enum Kind {
        case int, uint, double, string, date, bool, geoPoint
        /// `[String]`.
        case strings
    }

    struct Field {
        let offset: Int
        let kind: Kind
        let optional: Bool

        /// The value at this field of the properties at `base`, as a condition compares it: the
        /// value the property-list encoding of the property gives.
        @inline(__always)
        func read(_ base: UnsafeRawPointer) -> ModelValue {
            optional ? readOptional(base) : readValue(base)
        }

        private func readValue(_ base: UnsafeRawPointer) -> ModelValue {
            switch kind {
            case .int: .int(Int64(base.load(fromByteOffset: offset, as: Int.self)))
            case .uint: Self.unsigned(base.load(fromByteOffset: offset, as: UInt64.self))
            case .double: .double(base.load(fromByteOffset: offset, as: Double.self))
            case .string: .string(base.load(fromByteOffset: offset, as: String.self))
            case .date: .date(base.load(fromByteOffset: offset, as: Date.self))
            case .bool: .bool(base.load(fromByteOffset: offset, as: Bool.self))
            case .geoPoint: Self.point(base.load(fromByteOffset: offset, as: GeoPoint.self))
            case .strings: .array(base.load(fromByteOffset: offset, as: [String].self).map(ModelValue.string))
            }
        }

        private func readOptional(_ base: UnsafeRawPointer) -> ModelValue {
            let value: ModelValue? =
                switch kind {
                case .int: base.load(fromByteOffset: offset, as: Int?.self).map { .int(Int64($0)) }
                case .uint: base.load(fromByteOffset: offset, as: UInt64?.self).map(Self.unsigned)
                case .double: base.load(fromByteOffset: offset, as: Double?.self).map(ModelValue.double)
                case .string: base.load(fromByteOffset: offset, as: String?.self).map(ModelValue.string)
                case .date: base.load(fromByteOffset: offset, as: Date?.self).map(ModelValue.date)
                case .bool: base.load(fromByteOffset: offset, as: Bool?.self).map(ModelValue.bool)
                case .geoPoint: base.load(fromByteOffset: offset, as: GeoPoint?.self).map(Self.point)
                case .strings: base.load(fromByteOffset: offset, as: [String]?.self).map { .array($0.map(ModelValue.string)) }
                }
            return value ?? .null
        }

        /// An unsigned integer as the encoders write it: `int` when it fits.
        static func unsigned(_ value: UInt64) -> ModelValue {
            Int64(exactly: value).map(ModelValue.int) ?? .uint(value)
        }

        /// A point as the property-list encoding writes it.
        static func point(_ point: GeoPoint) -> ModelValue {
            .object(
                ModelValue.Object([
                    ("__type", "GeoPoint"), ("latitude", .double(point.latitude)), ("longitude", .double(point.longitude)),
                ]))
        }
    }

    /// A to-one reference property (`ModelRef`), through which a dotted key continues into the
    /// referenced model's own layout.
    struct Reference {
        let offset: Int
        let type: any LayoutReference.Type
    }

    /// The located fields by dotted key.
    let fields: [String: Field]
    /// The located to-one references by dotted key.
    let references: [String: Reference]

    /// Reads the value at a key of a model's properties in place: the properties' address and the
    /// context references are looked up in.
    typealias Reader = (UnsafeRawPointer, ModelContext?) -> ModelValue

    /// A reader of the value at `path`, when every step of it is in place: a field, or a reference
    /// followed by a path the referenced type reads in place. `nil` when the value must be read by
    /// encoding (which also reports unknown keys).
    func reader(for path: [String]) -> Reader? {
        access(path, nilValue: .null) { field in { field.read($0) } }
    }

    /// A test of `condition` on the value at `path` read in place, with a compiled matcher (see
    /// ``FieldMatcher``) at the end of the path, or `nil`.
    func matcher(for path: [String], _ condition: QueryCondition) -> ((UnsafeRawPointer, ModelContext?) -> Bool)? {
        // What a reference to no model answers: the condition on nil (which can't fail).
        guard let nilAnswer = try? condition.matches(.null, key: "", modelName: "") else { return nil }
        return access(path, nilValue: nilAnswer) { FieldMatcher.make($0, condition)?.test }
    }

    /// `leaf` applied to the field at `path`, directly or through to-one references (where a
    /// reference to no model gives `nilValue`); `nil` when a step isn't in place or `leaf` gives
    /// `nil`.
    func access<Result>(
        _ path: [String], nilValue: Result, leaf: (Field) -> ((UnsafeRawPointer) -> Result)?
    ) -> ((UnsafeRawPointer, ModelContext?) -> Result)? {
        if let field = fields[path.joined(separator: ".")] {
            guard let read = leaf(field) else { return nil }
            return { base, _ in read(base) }
        }
        for count in 1..<max(1, path.count) {
            if let reference = references[path[..<count].joined(separator: ".")] {
                return reference.type.follow(
                    at: reference.offset, then: Array(path[count...]), nilValue: nilValue, leaf: leaf)
            }
        }
        return nil
    }

    private static let cache = Locked([ObjectIdentifier: PropertyLayout]())

    /// The layout of `M.Properties`, probed on first use.
    static func of<M: Model>(_ type: M.Type) -> PropertyLayout {
        let key = ObjectIdentifier(M.self)
        if let known = cache.withLock({ $0[key] }) { return known }
        let layout = probe(M.self)
        cache.withLock { $0[key] = layout }
        return layout
    }
}

/// A reference type the layout follows in place: `ModelRef`.
protocol LayoutReference {
    /// A reference to no model, with an id the probe can find in memory.
    static func probeValue() -> Self
    /// Whether the reference at `base` holds the probe value's id.
    static func holdsProbeId(of probe: Self, at base: UnsafeRawPointer) -> Bool
    /// `leaf` applied to the field at `path` in the model the reference at `offset` leads to
    /// (`nilValue` for no model), or `nil` when the referenced type can't read `path` in place.
    static func follow<Result>(
        at offset: Int, then path: [String], nilValue: Result, leaf: (PropertyLayout.Field) -> ((UnsafeRawPointer) -> Result)?
    ) -> ((UnsafeRawPointer, ModelContext?) -> Result)?
}

extension ModelRef: LayoutReference {
    static func probeValue() -> ModelRef { ModelRef(id: ModelID.generate()) }

    static func holdsProbeId(of probe: ModelRef, at base: UnsafeRawPointer) -> Bool {
        base.load(as: ModelRef.self).id == probe.id
    }

    static func follow<Result>(
        at offset: Int, then path: [String], nilValue: Result, leaf: (PropertyLayout.Field) -> ((UnsafeRawPointer) -> Result)?
    ) -> ((UnsafeRawPointer, ModelContext?) -> Result)? {
        // A `ModelRef` stores only its id; were that ever not so, the path is read another way.
        guard MemoryLayout<ModelRef>.size == MemoryLayout<ModelID>.size,
            let read = PropertyLayout.of(Target.self).access(path, nilValue: nilValue, leaf: leaf)
        else { return nil }
        // The target as the model's getter and the encoder resolve it. This closure runs for
        // every model scanned, in generic code that is not specialized for `Target`: each use of
        // a type built from `Target` (`ModelRef<Target>`, its storage) looks its metadata up in
        // the runtime's cache. So the id is read as the plain `ModelID` a reference stores, and
        // the target's references resolve in `context` itself, which holds the target.
        return { base, context in
            let id = base.load(fromByteOffset: offset, as: ModelID.self)
            guard let context, !id.isZero, let target = context.model(Target.self, modelId: id) else { return nilValue }
            return target.storage.box.withValuesPointer { read($0, context) }
        }
    }
}

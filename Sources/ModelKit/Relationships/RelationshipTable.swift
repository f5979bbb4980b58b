import Foundation
import Synchronization

/// What one declaring initializer recorded while its type was probed.
// Unchecked: metatypes and key paths are immutable (metatypes are not `Sendable` before Swift 6.2).
struct RelationshipDeclaration: @unchecked Sendable {
    /// The other side, as the declaration names it.
    // Unchecked: every stored property is a `let`; `AnyKeyPath` is an immutable class not marked
    // `Sendable`, and metatypes are not `Sendable` before Swift 6.2.
    struct Inverse: @unchecked Sendable {
        /// The type that declares the inverse field (the declaring field's target).
        let declaringType: any Model.Type
        /// The type the inverse field refers to, which must be the declaring field's owner.
        let referredType: any Model.Type
        let keyPath: AnyKeyPath
        /// Where the inverse field is in its type's properties; `nil` when the key path is not a
        /// stored property.
        let offset: Int?
        let isArray: Bool

        init<T: Model, O: Model, V>(
            keyPath: WritableKeyPath<T.Properties, V>, access: RelationshipAccess<T, O>.Type, isArray: Bool
        ) {
            declaringType = T.self
            referredType = O.self
            self.keyPath = keyPath
            offset = MemoryLayout<T.Properties>.offset(of: keyPath)
            self.isArray = isArray
        }
    }

    let isArray: Bool
    let rule: DeleteRule
    let target: any Model.Type
    let inverse: Inverse?
}

/// A value a declaring initializer hands out while its type is probed: one it can be found by in
/// the bytes of the probed properties.
protocol RelationshipProbeValue {
    /// The value for the probe, holding `id`, and the bytes it occupies in the properties.
    static func probeValue(holding id: ModelID) -> (value: Self, pattern: [UInt8])
}

extension ModelRef: RelationshipProbeValue {
    static func probeValue(holding id: ModelID) -> (value: ModelRef, pattern: [UInt8]) {
        let value = ModelRef(id: id)
        return (value, withUnsafeBytes(of: value) { Array($0) })
    }
}

extension ModelArray: RelationshipProbeValue {
    static func probeValue(holding id: ModelID) -> (value: ModelArray, pattern: [UInt8]) {
        var value = ModelArray()
        value.references = [ModelRef(id: id)]
        // The array's first field is its references, whose buffer is unique while it lives.
        return (value, withUnsafeBytes(of: value.references) { Array($0) })
    }
}

/// The probe that learns a type's relationship declarations: it makes the type's default
/// properties with the declaring initializers recording, then finds each recorded value.
enum RelationshipProbe {
    /// How many probes run, on any thread: declaring initializers look no further while none does.
    private static let active = Atomic<Int>(0)

    @inline(__always) static var isActive: Bool { active.load(ordering: .relaxed) != 0 }

    final class Recorder {
        let thread = ObjectIdentifier(Thread.current)
        var entries: [(declaration: RelationshipDeclaration, id: ModelID, pattern: [UInt8], kept: Any)] = []
        private let salt = UInt64.random(in: 1 ... .max)

        func nextId() -> ModelID {
            ModelID(high: salt, low: 0x7E1A_7100_0000_0000 | UInt64(entries.count + 1))
        }
    }

    private static let recorders = Locked([Recorder]())

    /// Records `declaration` for the probe running on this thread and returns the value to
    /// find it by; an empty value when this thread runs no probe.
    static func record<V: RelationshipProbeValue & EmptyReference>(_ declaration: RelationshipDeclaration) -> V {
        let thread = ObjectIdentifier(Thread.current)
        guard let recorder = recorders.withLock({ $0.last { $0.thread == thread } }) else { return V.emptyReference }
        let id = recorder.nextId()
        let (value, pattern) = V.probeValue(holding: id)
        recorder.entries.append((declaration, id, pattern, value))
        return value
    }

    /// A field a type declares, where it is.
    struct Found: Sendable {
        let declaration: RelationshipDeclaration
        let offset: Int
        let name: String
    }

    private static let found = Locked([ObjectIdentifier: [Found]]())

    /// The relationship fields `M` declares, probed on first use.
    static func declarations<M: Model>(of type: M.Type) -> [Found] {
        let key = ObjectIdentifier(M.self)
        if let known = found.withLock({ $0[key] }) { return known }
        let recorder = Recorder()
        recorders.withLock { $0.append(recorder) }
        active.add(1, ordering: .relaxed)
        var probed = M.Properties()
        active.subtract(1, ordering: .relaxed)
        recorders.withLock { $0.removeAll { $0 === recorder } }
        var result: [Found] = []
        if !recorder.entries.isEmpty {
            let bytes = withUnsafeBytes(of: &probed) { Array($0) }
            let names = keyNames(of: probed)
            for entry in recorder.entries {
                let size = entry.pattern.count
                guard size <= bytes.count else { continue }
                let offsets = stride(from: 0, through: bytes.count - size, by: 8).filter {
                    bytes[$0..<($0 + size)].elementsEqual(entry.pattern)
                }
                // A declaring initializer used for something other than a stored property's
                // default (inside a nested value, say) is not found, and declares nothing.
                guard offsets.count == 1 else { continue }
                let name = names.first { $0.value.contains(entry.id.description) }?.key ?? "property at offset \(offsets[0])"
                result.append(Found(declaration: entry.declaration, offset: offsets[0], name: name))
            }
        }
        withExtendedLifetime(recorder) {}
        withExtendedLifetime(probed) {}
        found.withLock { $0[key] = result }
        return result
    }

    /// The top-level keys of `properties` with the text of their values, to name fields in
    /// messages (best effort: a type that doesn't encode to an object gives none).
    private static func keyNames<P: Encodable>(of properties: P) -> [(key: String, value: String)] {
        guard let data = try? JSONEncoder().encode(properties),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [] }
        return object.map { ($0.key, "\($0.value)") }.sorted { $0.key < $1.key }
    }
}

/// References that have an empty value, for a declaring initializer that runs outside a probe.
protocol EmptyReference {
    static var emptyReference: Self { get }
}

extension ModelRef: EmptyReference {
    static var emptyReference: ModelRef { ModelRef() }
}

extension ModelArray: EmptyReference {
    static var emptyReference: ModelArray { ModelArray() }
}

/// The relationships a model type declares, checked against their inverses.
final class RelationshipTable: Sendable {
    /// A class, so that handing a field out (on every write of a reference) copies no
    /// existentials.
    final class Field: Sendable {
        /// The property's coding key, for messages.
        let name: String
        let rule: DeleteRule
        let side: any RelationshipSide
        /// The other side, when an inverse is declared (on both sides, naming each other).
        let inverse: (any RelationshipSide)?

        init(name: String, rule: DeleteRule, side: any RelationshipSide, inverse: (any RelationshipSide)?) {
            self.name = name
            self.rule = rule
            self.side = side
            self.inverse = inverse
        }
    }

    let fields: [Field]
    /// Where each field is in the properties, in the order of `fields`.
    private let offsets: [Int]
    /// The problems found in the declarations, for ``ModelRegistry/register(_:)``.
    let problems: [RelationshipDeclarationError]

    private init(fields: [Field], problems: [RelationshipDeclarationError]) {
        self.fields = fields
        offsets = fields.map(\.side.offset)
        self.problems = problems
    }

    /// The field at `offset` of the properties, if it declares a relationship.
    ///
    /// - Complexity: O(f), where f is the number of relationship fields.
    func field(at offset: Int) -> Field? {
        offsets.firstIndex(of: offset).map { fields[$0] }
    }

    /// An immutable map from type to table, replaced as a whole when a type is added, so that
    /// looking a type up takes no lock: it is on the slow path of every write.
    private final class Snapshot: Sendable {
        let tables: [ObjectIdentifier: RelationshipTable?]
        init(_ tables: [ObjectIdentifier: RelationshipTable?]) { self.tables = tables }
    }

    /// The current snapshot, retained for ever (old ones too: a reader may still use one, and
    /// there is one per model type).
    private static let current = Atomic<UInt>(UInt(bitPattern: Unmanaged.passRetained(Snapshot([:])).toOpaque()))
    /// The snapshots replaced so far, held so that they stay reachable (a leak checker would
    /// report them otherwise); also the lock that builders take.
    private static let retired = Locked([Snapshot]())

    /// The table of `M`, or `nil` when it declares no relationship.
    @inline(__always)
    static func of<M: Model>(_ type: M.Type) -> RelationshipTable? {
        let raw = current.load(ordering: .acquiring)
        let snapshot = Unmanaged<Snapshot>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!).takeUnretainedValue()
        if let known = snapshot.tables[ObjectIdentifier(M.self)] { return known }
        return build(M.self)
    }

    private static func build<M: Model>(_ type: M.Type) -> RelationshipTable? {
        let declared = RelationshipProbe.declarations(of: M.self)
        var table: RelationshipTable?
        if !declared.isEmpty {
            var fields: [Field] = []
            var problems: [RelationshipDeclarationError] = []
            for found in declared {
                let side = found.declaration.target.side(
                    ownedBy: M.self, offset: found.offset, isArray: found.declaration.isArray)
                var inverse: (any RelationshipSide)?
                if let declaredInverse = found.declaration.inverse {
                    switch check(found, of: M.self, against: declaredInverse) {
                    case .success(let other): inverse = other
                    case .failure(let problem): problems.append(problem)
                    }
                }
                fields.append(Field(name: found.name, rule: found.declaration.rule, side: side, inverse: inverse))
            }
            table = RelationshipTable(fields: fields, problems: problems)
            for problem in problems {
                ModelRegistry.warn("\(problem.description); the relationship keeps no inverse")
            }
        }
        retired.withLock { retired in
            let raw = current.load(ordering: .acquiring)
            let unmanaged = Unmanaged<Snapshot>.fromOpaque(UnsafeRawPointer(bitPattern: raw)!)
            let old = unmanaged.takeUnretainedValue()
            if let known = old.tables[ObjectIdentifier(M.self)] {
                table = known
                return
            }
            var tables = old.tables
            tables[ObjectIdentifier(M.self)] = .some(table)
            // The list takes over the reference the atomic held.
            retired.append(unmanaged.takeRetainedValue())
            current.store(UInt(bitPattern: Unmanaged.passRetained(Snapshot(tables)).toOpaque()), ordering: .releasing)
        }
        return table
    }

    /// The inverse side `found` names, when the two declarations agree.
    private static func check<M: Model>(
        _ found: RelationshipProbe.Found, of type: M.Type, against inverse: RelationshipDeclaration.Inverse
    ) -> Result<any RelationshipSide, RelationshipDeclarationError> {
        let other = inverse.declaringType.modelName
        func problem(_ text: String) -> Result<any RelationshipSide, RelationshipDeclarationError> {
            .failure(RelationshipDeclarationError(modelName: M.modelName, problem: "\"\(found.name)\" \(text)"))
        }
        guard inverse.referredType == M.self else {
            return problem(
                "names an inverse on \(other) that refers to \(inverse.referredType.modelName), not to \(M.modelName)")
        }
        guard let offset = inverse.offset else {
            return problem("names an inverse on \(other) that is not a stored property of \(other).Properties")
        }
        guard let partner = inverse.declaringType.declaredRelationships().first(where: { $0.offset == offset }) else {
            return problem(
                "names an inverse on \(other) that declares no inverse itself; declare it on both sides, naming each other")
        }
        guard let back = partner.declaration.inverse else {
            return problem(
                "names \(other).\(partner.name) as its inverse, which declares no inverse; declare it on both sides, naming each other"
            )
        }
        guard back.declaringType == M.self, back.offset == found.offset else {
            return problem("names \(other).\(partner.name) as its inverse, which names a different partner")
        }
        return .success(M.side(ownedBy: inverse.declaringType, offset: offset, isArray: inverse.isArray))
    }
}

extension Model {
    /// The access to a relationship field of `Owner` (at `offset`) that leads to this type.
    static func side<Owner: Model>(ownedBy owner: Owner.Type, offset: Int, isArray: Bool) -> any RelationshipSide {
        RelationshipAccess<Owner, Self>(offset: offset, isArray: isArray)
    }

    static func side(ownedBy owner: any Model.Type, offset: Int, isArray: Bool) -> any RelationshipSide {
        owner.sideLeading(to: Self.self, offset: offset, isArray: isArray)
    }

    static func sideLeading<Target: Model>(to target: Target.Type, offset: Int, isArray: Bool) -> any RelationshipSide {
        RelationshipAccess<Self, Target>(offset: offset, isArray: isArray)
    }

    /// What is wrong with the type's relationship declarations.
    static var relationshipProblems: [RelationshipDeclarationError] {
        RelationshipTable.of(Self.self)?.problems ?? []
    }

    /// The relationship fields the type declares (unchecked).
    static func declaredRelationships() -> [RelationshipProbe.Found] {
        RelationshipProbe.declarations(of: Self.self)
    }
}

/// Whether `M` declares relationships, so that its models' quiet writes of references still
/// look for inverses (see `ChangeEpoch.relationshipsBit`). Asked on the slow path of writes: the
/// first write of every new model.
///
/// - Complexity: O(1).
@usableFromInline func _hasRelationships<M: Model>(_ type: M.Type) -> Bool {
    // The last type asked about, with the answer in its low bit (type metadata is aligned): the
    // tables' look-up hashes the type, and models are mostly written many of one type at a time.
    // One word, so that threads racing to replace it never pair a type with another's answer.
    let key = UInt(bitPattern: ObjectIdentifier(M.self))
    let last = lastRelationshipAnswer.load(ordering: .relaxed)
    if last & ~1 == key { return last & 1 == 1 }
    let answer = RelationshipTable.of(M.self) != nil
    lastRelationshipAnswer.store(key | (answer ? 1 : 0), ordering: .relaxed)
    return answer
}

/// See ``_hasRelationships(_:)``; 0 before the first question.
private let lastRelationshipAnswer = Atomic<UInt>(0)

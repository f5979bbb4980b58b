import ModelKit

/// One field that both sides changed since the last sync, and what the merge kept.
///
/// The values are those the merge compared: after ``FieldMerge/normalized(_:)``, `.null` for a
/// missing key.
struct FieldConflict: Equatable, Sendable {
    /// How a conflict was resolved.
    enum Resolution: Equatable, Sendable {
        /// The remote value was kept: the tie-break for values that do not merge.
        case remoteKept
        /// A to-many reference merged as sets of added and removed members.
        case mergedAsSet
    }

    let field: String
    /// The field's value at the last sync; nil when there is no base (the record was created on
    /// both sides).
    let base: ModelValue?
    let local: ModelValue
    let remote: ModelValue
    let merged: ModelValue
    let resolution: Resolution
}

/// The field-by-field three-way merge of a record that changed both on this device and on the
/// server since the last sync.
///
/// Values are in the record form a Kinto record holds: a reference is a pointer object, exactly
/// `{"__type": "ModelPointer", "model": <string>, "objectId": <string>}`, and a to-many reference
/// is an array of them. A missing key counts as `.null`.
enum FieldMerge {
    /// Merges a record's fields, field by field, and reports the fields both sides changed.
    ///
    /// The rules, which are the library's promise:
    /// 1. Fields are visited in this order, which is also the order of the result: the keys of
    ///    `remote` in its order, then the keys only `local` has in its order, then the keys only
    ///    `base` has in its order. For each, *b*, *l* and *r* are its values in `base`, `local` and
    ///    `remote`, `.null` where the key is missing.
    /// 2. *l* == *r*: kept, with no conflict, even when both sides changed it the same way.
    /// 3. With a base: *l* == *b* gives *r* (only the server changed it); *r* == *b* gives *l*
    ///    (only this device changed it).
    /// 4. Otherwise both changed it differently (or there is no base and *l* != *r*): a conflict.
    ///    When *l* and *r*, and *b* when there is a base, are all arrays of pointers only (empty
    ///    arrays count; a base that lacks the key has *b* = `.null`, which is not an array), they
    ///    merge as sets of members keyed by model name and object id: the base's members, plus
    ///    those either side added, minus those either side removed (no base: the base's set is
    ///    empty). The result lists the remote members that stay in the remote order, then the
    ///    others in the local order, each once (a member listed twice in an input counts once);
    ///    the conflict says ``FieldConflict/Resolution/mergedAsSet``. Any other values: the remote
    ///    value wins, ``FieldConflict/Resolution/remoteKept``. It wins because it is the value
    ///    other devices have already seen, and because it makes every device converge whatever
    ///    order they sync in: a device that merges later keeps what the server holds rather than
    ///    overwriting what others merged before it.
    /// 5. A field whose merged value is `.null` is in the result, as `.null`, only when `remote`
    ///    has the key (even as `.null`); otherwise it is left out. So the result never has a key
    ///    that neither `remote` nor `local` has, and a key that only `local` or only `base` has
    ///    and that merges to `.null` is dropped.
    ///
    /// Values compare with `ModelValue`'s `==` (objects as whole values, keys in any order;
    /// `.int(3)` is not `.double(3)`), after one normalization (``normalized(_:)``): an integral
    /// double that ModelKit writes with an exponent is compared, and kept, as the integer it
    /// comes back as from Kinto on PostgreSQL. Doubles are not otherwise rounded, and Kinto on
    /// PostgreSQL may give a double back a unit in the last place away (see `matchesStored`): so
    /// the base must be the record as the server gave it back, not the values this device sent,
    /// or such a double looks changed on the server and a local edit of it loses the tie-break.
    ///
    /// ```swift
    /// let (merged, conflicts) = FieldMerge.threeWay(
    ///     base: ModelValue.Object([("title", "Draft"), ("likes", 1)]),
    ///     local: ModelValue.Object([("title", "Final"), ("likes", 1)]),
    ///     remote: ModelValue.Object([("title", "Draft"), ("likes", 2)]))
    /// // merged: title "Final" (this device's edit), likes 2 (the server's); conflicts: none
    /// ```
    ///
    /// - Parameters:
    ///   - base: The fields at the last sync; nil when there is none (both sides created it).
    ///   - local: The fields on this device.
    ///   - remote: The fields on the server.
    /// - Returns: The merged fields, and one ``FieldConflict`` per field both sides changed to
    ///   different values, in the order of the fields.
    /// - Complexity: O(*n*) on average for *n* values in the three objects (pointers are hashed
    ///   to merge as sets), plus O(*k*) per key lookup in objects of *k* < 12 keys.
    static func threeWay(base: ModelValue.Object?, local: ModelValue.Object, remote: ModelValue.Object)
        -> (merged: ModelValue.Object, conflicts: [FieldConflict])
    {
        var merged = ModelValue.Object()
        var conflicts: [FieldConflict] = []
        for key in fieldOrder(base: base, local: local, remote: remote) {
            let l = normalized(local[key] ?? .null)
            let r = normalized(remote[key] ?? .null)
            let b = base.map { normalized($0[key] ?? .null) }
            let value: ModelValue
            if l == r {
                value = l
            } else if let b, l == b {
                value = r
            } else if let b, r == b {
                value = l
            } else if let localSet = pointers(l), let remoteSet = pointers(r), let baseSet = pointers(b ?? .array([])) {
                value = .array(mergeSets(base: baseSet, local: localSet, remote: remoteSet))
                conflicts.append(FieldConflict(field: key, base: b, local: l, remote: r, merged: value, resolution: .mergedAsSet))
            } else {
                value = r
                conflicts.append(FieldConflict(field: key, base: b, local: l, remote: r, merged: value, resolution: .remoteKept))
            }
            if value != .null || remote[key] != nil { merged[key] = value }
        }
        return (merged, conflicts)
    }

    /// The keys of `remote` in order, then those only `local` has, then those only `base` has.
    private static func fieldOrder(base: ModelValue.Object?, local: ModelValue.Object, remote: ModelValue.Object)
        -> [String]
    {
        var keys = remote.keys
        keys += local.keys.filter { remote[$0] == nil }
        if let base { keys += base.keys.filter { remote[$0] == nil && local[$0] == nil } }
        return keys
    }

    /// A member of a to-many reference: the record it points to.
    private struct Member: Hashable {
        let model: String
        let objectId: String
    }

    /// The members of `value` when it is an array of pointers only (empty included), in order.
    private static func pointers(_ value: ModelValue) -> [(member: Member, pointer: ModelValue)]? {
        guard case .array(let elements) = value else { return nil }
        var members: [(member: Member, pointer: ModelValue)] = []
        members.reserveCapacity(elements.count)
        for element in elements {
            // Exactly the three keys: an object with more is a value, not a reference.
            guard case .object(let object) = element, object.count == 3, object["__type"] == "ModelPointer",
                case .string(let model)? = object["model"], case .string(let objectId)? = object["objectId"]
            else { return nil }
            members.append((Member(model: model, objectId: objectId), element))
        }
        return members
    }

    /// (B ∪ added by L ∪ added by R) − removed by L − removed by R, as a list: the remote's
    /// members that stay in the remote order, then the rest in the local order, each once.
    private static func mergeSets(
        base: [(member: Member, pointer: ModelValue)], local: [(member: Member, pointer: ModelValue)],
        remote: [(member: Member, pointer: ModelValue)]
    ) -> [ModelValue] {
        let inBase = Set(base.map(\.member))
        let inLocal = Set(local.map(\.member))
        let inRemote = Set(remote.map(\.member))
        // A base member stays only if neither side removed it; one not in the base was added by
        // the side that has it, and no side can have removed it.
        func stays(_ member: Member) -> Bool {
            !inBase.contains(member) || (inLocal.contains(member) && inRemote.contains(member))
        }
        var seen = Set<Member>()
        var result: [ModelValue] = []
        result.reserveCapacity(max(local.count, remote.count))
        // Every member that stays is in the remote or the local list: a base member that stays
        // is in both, and an added one is in the side that added it.
        for (member, pointer) in remote + local where stays(member) && seen.insert(member).inserted {
            result.append(pointer)
        }
        return result
    }

    /// `value` with every double that a round trip through Kinto on PostgreSQL turns into an
    /// integer turned into that integer, at any depth.
    ///
    /// Why: ModelKit writes a double with its shortest text, which has an exponent from 1e16 up
    /// (`1e+16`); PostgreSQL keeps JSON numbers as `numeric` and writes them back without one
    /// (`10000000000000000`), which reads as `.int` (`.uint` above `Int64.max`). The memory backend
    /// keeps the text. Without this, a base or local value this device wrote would differ from
    /// the same value read from the server, and the merge would see a change no one made. Other
    /// numbers come back as they went, so nothing else is coerced: `.int(3)` stays `.int(3)`,
    /// `.double(3)` (written `3.0`) stays `.double(3)`, and they are not equal.
    ///
    /// - Complexity: O(*n*) in the number of values in `value`.
    static func normalized(_ value: ModelValue) -> ModelValue {
        switch value {
        case .double(let number):
            guard number.isFinite, number == number.rounded(), number.description.contains("e") else { return value }
            if let integer = Int64(exactly: number) { return .int(integer) }
            if let integer = UInt64(exactly: number) { return .uint(integer) }
            return value
        case .array(let elements):
            return .array(elements.map(normalized))
        case .object(let object):
            return .object(ModelValue.Object(object.map { ($0.key, normalized($0.value)) }))
        default:
            return value
        }
    }
}

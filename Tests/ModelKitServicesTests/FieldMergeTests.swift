import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// A record's fields, from pairs, in order.
private func fields(_ pairs: KeyValuePairs<String, ModelValue>) -> ModelValue.Object {
    ModelValue.Object(pairs.map { ($0.key, $0.value) })
}

/// A pointer in the record form.
private func pointer(_ model: String, _ objectId: String) -> ModelValue {
    .object(fields(["__type": "ModelPointer", "model": .string(model), "objectId": .string(objectId)]))
}

private func tags(_ ids: String...) -> ModelValue { .array(ids.map { pointer("Tag", $0) }) }

@Suite("The three-way merge of a record's fields")
struct FieldMergeTests {
    @Test("A field changed on one side only takes that side's value, with no conflict")
    func oneSideChanged() {
        let base = fields(["title": "Draft", "likes": 1])
        let local = fields(["title": "Final", "likes": 1])
        let remote = fields(["title": "Draft", "likes": 2])
        let (merged, conflicts) = FieldMerge.threeWay(base: base, local: local, remote: remote)
        #expect(merged == fields(["title": "Final", "likes": 2]))
        #expect(conflicts.isEmpty)
    }

    @Test("A field both sides changed the same way is kept, with no conflict")
    func bothSameChange() {
        let (merged, conflicts) = FieldMerge.threeWay(
            base: fields(["title": "Draft"]), local: fields(["title": "Final"]), remote: fields(["title": "Final"]))
        #expect(merged == fields(["title": "Final"]))
        #expect(conflicts.isEmpty)
    }

    @Test("A scalar both sides changed differently keeps the remote value and reports it")
    func bothDifferentScalars() {
        let (merged, conflicts) = FieldMerge.threeWay(
            base: fields(["title": "Draft", "n": 1]), local: fields(["title": "Mine", "n": 1]),
            remote: fields(["title": "Theirs", "n": 1]))
        #expect(merged == fields(["title": "Theirs", "n": 1]))
        #expect(
            conflicts == [
                FieldConflict(
                    field: "title", base: "Draft", local: "Mine", remote: "Theirs", merged: "Theirs", resolution: .remoteKept)
            ])
    }

    @Test("A nested object is one value: edits to different members of it conflict, and the remote one wins")
    func nestedObjectsAreWholeValues() {
        let base = fields(["place": ["city": "Paris", "zip": "75001"]])
        let local = fields(["place": ["city": "Lyon", "zip": "75001"]])
        let remote = fields(["place": ["city": "Paris", "zip": "75002"]])
        let (merged, conflicts) = FieldMerge.threeWay(base: base, local: local, remote: remote)
        #expect(merged == remote)
        #expect(conflicts.map(\.resolution) == [.remoteKept])
        // Keys in another order are the same object: no change, no conflict.
        let reordered = fields(["place": ["zip": "75001", "city": "Paris"]])
        let (same, none) = FieldMerge.threeWay(base: base, local: reordered, remote: remote)
        #expect(same == remote)
        #expect(none.isEmpty)
    }

    @Test("A to-many reference merges members added and removed on both sides, remote order first")
    func toManyAddAndRemoveOnBothSides() {
        let base = fields(["tags": tags("1", "2", "3")])
        let local = fields(["tags": tags("5", "1", "3")])  // removed 2, added 5
        let remote = fields(["tags": tags("4", "2", "1")])  // removed 3, added 4
        let (merged, conflicts) = FieldMerge.threeWay(base: base, local: local, remote: remote)
        #expect(merged == fields(["tags": tags("4", "1", "5")]))
        #expect(
            conflicts == [
                FieldConflict(
                    field: "tags", base: tags("1", "2", "3"), local: tags("5", "1", "3"), remote: tags("4", "2", "1"),
                    merged: tags("4", "1", "5"), resolution: .mergedAsSet)
            ])
    }

    @Test("A member added on both sides appears once, and one listed twice in an input counts once")
    func sameMemberAddedOnBothSides() {
        let (merged, conflicts) = FieldMerge.threeWay(
            base: fields(["tags": tags("1")]), local: fields(["tags": tags("1", "2", "3", "2")]),
            remote: fields(["tags": tags("2", "1", "2")]))
        #expect(merged == fields(["tags": tags("2", "1", "3")]))
        #expect(conflicts.map(\.resolution) == [.mergedAsSet])
    }

    @Test("A member removed on one side and kept on the other is removed")
    func removedOnOneSideKeptOnTheOther() {
        let (merged, _) = FieldMerge.threeWay(
            base: fields(["tags": tags("1", "2")]), local: fields(["tags": tags("1", "2", "3")]),
            remote: fields(["tags": tags("1")]))
        #expect(merged == fields(["tags": tags("1", "3")]))
        // Both sides removing everything, differently ordered on the way, gives an empty list.
        let (emptied, conflicts) = FieldMerge.threeWay(
            base: fields(["tags": tags("1", "2")]), local: fields(["tags": tags("2")]), remote: fields(["tags": tags("1")]))
        #expect(emptied == fields(["tags": []]))
        #expect(conflicts.map(\.resolution) == [.mergedAsSet])
    }

    @Test("Pointers with models of the same object id are different members")
    func membersAreKeyedByModelAndObjectId() {
        let (merged, _) = FieldMerge.threeWay(
            base: fields(["refs": []]), local: fields(["refs": [pointer("Tag", "1")]]),
            remote: fields(["refs": [pointer("Post", "1")]]))
        #expect(merged == fields(["refs": [pointer("Post", "1"), pointer("Tag", "1")]]))
    }

    @Test("Arrays that are not only pointers, or a base without the field, take the remote value")
    func notPointerArraysTakeTheRemoteValue() {
        let withExtraKey = ModelValue.object(
            fields(["__type": "ModelPointer", "model": "Tag", "objectId": "2", "note": "x"]))
        let numericId = ModelValue.object(fields(["__type": "ModelPointer", "model": "Tag", "objectId": 2]))
        for odd in [withExtraKey, numericId, "2", ModelValue.null] {
            let (merged, conflicts) = FieldMerge.threeWay(
                base: fields(["tags": tags("1")]), local: fields(["tags": .array([pointer("Tag", "1"), odd])]),
                remote: fields(["tags": tags("3")]))
            #expect(merged == fields(["tags": tags("3")]))
            #expect(conflicts.map(\.resolution) == [.remoteKept])
        }
        // The base has no such key: its value is null, not an empty array.
        let (merged, conflicts) = FieldMerge.threeWay(
            base: fields(["title": "A"]), local: fields(["tags": tags("1")]), remote: fields(["tags": tags("2")]))
        #expect(merged == fields(["tags": tags("2")]))
        #expect(conflicts.map(\.resolution) == [.remoteKept])
    }

    @Test("With no base, equal values are kept, different ones conflict, and to-many references unite")
    func noBase() {
        let (equal, none) = FieldMerge.threeWay(base: nil, local: fields(["a": 1]), remote: fields(["a": 1]))
        #expect(equal == fields(["a": 1]))
        #expect(none.isEmpty)
        let (different, conflicts) = FieldMerge.threeWay(
            base: nil, local: fields(["a": 1, "tags": tags("1", "2")]), remote: fields(["a": 2, "tags": tags("3", "1")]))
        #expect(different == fields(["a": 2, "tags": tags("3", "1", "2")]))
        #expect(
            conflicts == [
                FieldConflict(field: "a", base: nil, local: 1, remote: 2, merged: 2, resolution: .remoteKept),
                FieldConflict(
                    field: "tags", base: nil, local: tags("1", "2"), remote: tags("3", "1"), merged: tags("3", "1", "2"),
                    resolution: .mergedAsSet),
            ])
        // A field only this device has: the remote's value is null, so it conflicts, the remote
        // null wins, and it is dropped since the remote does not have the key.
        let (oneSided, oneConflict) = FieldMerge.threeWay(base: nil, local: fields(["a": 1]), remote: fields([:]))
        #expect(oneSided == fields([:]))
        #expect(oneConflict.map(\.field) == ["a"])
    }

    @Test("A missing key is null: a null is kept only where the remote has the key")
    func missingKeysAndExplicitNull() {
        // This device removed the key, the server kept it: the merge gives null, and the remote
        // has the key, so it stays, as an explicit null.
        let (removedHere, c1) = FieldMerge.threeWay(
            base: fields(["a": 1, "b": 2]), local: fields(["b": 2]), remote: fields(["a": 1, "b": 2]))
        #expect(removedHere.keys == ["a", "b"])
        #expect(removedHere["a"] == .null)
        #expect(c1.isEmpty)
        // The server removed it, this device kept it: null, and the remote lacks the key: dropped.
        let (removedThere, c2) = FieldMerge.threeWay(
            base: fields(["a": 1, "b": 2]), local: fields(["a": 1, "b": 2]), remote: fields(["b": 2]))
        #expect(removedThere.keys == ["b"])
        #expect(c2.isEmpty)
        // An explicit null equals a missing key: no change, no conflict, and the remote's null stays.
        let (explicit, c3) = FieldMerge.threeWay(
            base: fields([:]), local: fields(["a": nil, "c": nil]), remote: fields(["a": nil, "b": nil]))
        #expect(explicit.keys == ["a", "b"])
        #expect(explicit.allSatisfy { $0.value == .null })
        #expect(c3.isEmpty)
        // Only the base has the key and both removed it: nothing is added.
        let (gone, c4) = FieldMerge.threeWay(base: fields(["a": 1]), local: fields([:]), remote: fields([:]))
        #expect(gone.isEmpty)
        #expect(c4.isEmpty)
    }

    @Test("The result lists the remote's keys in its order, then the local's own, then the base's")
    func keyOrderOfTheResult() {
        let base = fields(["z": 1, "y": 1, "x": 1])
        let local = fields(["l2": 1, "b": 1, "l1": 1, "a": 1, "z": 1, "y": 2])
        let remote = fields(["b": 1, "a": 1, "r": 1, "z": 1, "x": 1])
        let (merged, conflicts) = FieldMerge.threeWay(base: base, local: local, remote: remote)
        // x: the remote has it unchanged and this device removed it, so null, kept because the
        // remote has the key; y: this device changed it and the server removed it, so the
        // remote's null wins and the key is dropped.
        #expect(merged.keys == ["b", "a", "r", "z", "x", "l2", "l1"])
        #expect(merged["x"] == .null)
        #expect(conflicts.map(\.field) == ["y"])
    }

    @Test("Numbers compare as ModelValue does: an integer is not a double of the same value")
    func numbersAreNotCoerced() {
        let (merged, conflicts) = FieldMerge.threeWay(
            base: fields(["n": 3]), local: fields(["n": .double(3)]), remote: fields(["n": 4]))
        #expect(merged == fields(["n": 4]))
        #expect(conflicts.map(\.resolution) == [.remoteKept])
    }

    @Test("A record read from its JSON text gives back the integers and doubles ModelKit wrote")
    func numbersReadFromRecordText() throws {
        let written = ModelValue.object(fields(["i": 3, "d": .double(3), "u": .uint(UInt64.max), "f": 0.1]))
        let record = try RemoteRecord(
            id: RecordID(collection: "Post", id: "1"), version: RemoteVersion("1"), jsonData: written.jsonData())
        #expect(ModelValue.object(record.fields) == written)
        let (merged, conflicts) = FieldMerge.threeWay(
            base: record.fields, local: fields(["i": 3, "d": .double(3), "u": .uint(UInt64.max), "f": 0.2]),
            remote: record.fields)
        #expect(merged["f"] == 0.2)
        #expect(conflicts.isEmpty)
    }

    @Test("A double Kinto on PostgreSQL gives back as an integer is the same value, not a change")
    func doublesPostgreSQLTurnsIntoIntegers() throws {
        // ModelKit writes 1e16 with an exponent; PostgreSQL's jsonb keeps it as numeric and
        // writes `10000000000000000`, which reads back as an integer.
        let sent = ModelValue.double(1e16)
        #expect(String(decoding: sent.jsonData(), as: UTF8.self) == "1e+16")
        let stored = try RemoteRecord(
            id: RecordID(collection: "Post", id: "1"), version: RemoteVersion("2"),
            jsonData: Data(#"{"n": 10000000000000000, "big": 10000000000000000000, "title": "B"}"#.utf8))
        #expect(stored.fields["n"] == .int(10_000_000_000_000_000))
        #expect(stored.fields["big"] == .uint(10_000_000_000_000_000_000))
        // The base is what this device sent; the server changed the title only.
        let base = fields(["n": sent, "big": .double(1e19), "title": "A"])
        let local = fields(["n": .double(2e16), "big": .double(1e19), "title": "A"])
        let (merged, conflicts) = FieldMerge.threeWay(base: base, local: local, remote: stored.fields)
        #expect(conflicts.isEmpty)
        #expect(merged["n"] == .int(20_000_000_000_000_000))
        #expect(merged["big"] == .uint(10_000_000_000_000_000_000))
        #expect(merged["title"] == "B")
        // Doubles written without an exponent, or not integral, are left as they are.
        #expect(FieldMerge.normalized(.double(9_007_199_254_740_992)) == .double(9_007_199_254_740_992))
        #expect(FieldMerge.normalized(.double(1e300)) == .double(1e300))
        #expect(FieldMerge.normalized(.double(1.5e-7)) == .double(1.5e-7))
        #expect(FieldMerge.normalized([["x": .double(-1e17)]]) == [["x": .int(-100_000_000_000_000_000)]])
    }
}

/// Thousands of small random records, merged by ``FieldMerge`` and by a reference merge written
/// here the obvious way, with the merge's properties checked on each.
@Suite("The three-way merge agrees with a reference merge on random records")
struct FieldMergeRandomTests {
    static let keys = ["a", "b", "c", "d"]
    static let members = ["Tag", "Post"].flatMap { model in ["1", "2", "3"].map { pointer(model, $0) } }

    @Test("Random records merge as the reference does, and the merge's properties hold")
    func randomRecordsMergeAsTheReference() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        var setMerges = 0
        var remoteKept = 0
        for round in 0..<4000 {
            let base: ModelValue.Object? = random.chance(0.15) ? nil : Self.object(&random)
            let local = Self.edited(base ?? ModelValue.Object(), &random)
            let remote = Self.edited(base ?? ModelValue.Object(), &random)
            let context = "seed \(seed), round \(round): base \(String(describing: base)), local \(local), remote \(remote)"

            let (merged, conflicts) = FieldMerge.threeWay(base: base, local: local, remote: remote)
            let expected = ReferenceMerge.merge(base: base, local: local, remote: remote)
            #expect(merged == expected.merged, "\(context)")
            #expect(merged.keys == expected.merged.keys, "\(context)")
            #expect(conflicts == expected.conflicts, "\(context)")
            setMerges += conflicts.count { $0.resolution == .mergedAsSet }
            remoteKept += conflicts.count { $0.resolution == .remoteKept }

            // Never a key that neither the remote nor the local has.
            #expect(merged.keys.allSatisfy { remote[$0] != nil || local[$0] != nil }, "\(context)")

            if let base {
                // Nothing changed here: the remote, exactly.
                let (fromRemote, none) = FieldMerge.threeWay(base: base, local: base, remote: remote)
                #expect(fromRemote == remote && fromRemote.keys == remote.keys && none.isEmpty, "\(context)")
                // Nothing changed there: the local, but for nulls where the remote has the key.
                let (fromLocal, noneEither) = FieldMerge.threeWay(base: base, local: local, remote: base)
                #expect(noneEither.isEmpty, "\(context)")
                for key in Set(fromLocal.keys + local.keys + base.keys) {
                    #expect((fromLocal[key] ?? .null) == (local[key] ?? .null), "\(context), key \(key)")
                }
            }

            // Swapping the sides gives the same members for every to-many reference.
            let (swapped, _) = FieldMerge.threeWay(base: base, local: remote, remote: local)
            for key in merged.keys where ReferenceMerge.allPointerArrays(base: base, local: local, remote: remote, key: key) {
                #expect(
                    ReferenceMerge.memberSet(merged[key] ?? .null) == ReferenceMerge.memberSet(swapped[key] ?? .null),
                    "\(context), key \(key)")
            }

            // Merging again changes nothing: after the push (all three are the result), and
            // after the pull (the base and the remote are what was pulled).
            let (again, noneAgain) = FieldMerge.threeWay(base: merged, local: merged, remote: merged)
            #expect(again == merged && again.keys == merged.keys && noneAgain.isEmpty, "\(context)")
            let (pulled, nonePulled) = FieldMerge.threeWay(base: remote, local: merged, remote: remote)
            #expect(pulled == merged && pulled.keys == merged.keys && nonePulled.isEmpty, "\(context)")
        }
        // The domains are small enough that every rule is met often.
        #expect(setMerges > 200 && remoteKept > 200, "seed \(seed): \(setMerges) set merges, \(remoteKept) remote kept")
    }

    /// A value from a small domain, so that two draws are often equal.
    static func value(_ random: inout SplitMix64) -> ModelValue {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: return .null
        case 1: return random.pick([1, 2, .double(1), .double(2.5)])
        case 2: return random.pick(["x", "y", true, false])
        case 3: return random.pick([["p": 1], ["p": 2], ["p": 1, "q": nil], [:]])
        case 4: return random.pick([[1, 2], [], [pointer("Tag", "1"), 1]])
        case 5:
            // Not quite pointers: an extra key, an id that is a number.
            return random.pick([
                [.object(fields(["__type": "ModelPointer", "model": "Tag", "objectId": "1", "x": 1]))],
                [pointer("Tag", "2"), .object(fields(["__type": "ModelPointer", "model": "Tag", "objectId": 2]))],
            ])
        default: return pointers(&random)
        }
    }

    /// An array of 0 to 4 pointers among six, repeats allowed.
    static func pointers(_ random: inout SplitMix64) -> ModelValue {
        .array((0..<Int.random(in: 0...4, using: &random)).map { _ in random.pick(members) })
    }

    static func object(_ random: inout SplitMix64) -> ModelValue.Object {
        ModelValue.Object(keys.shuffled(using: &random).filter { _ in random.chance(0.6) }.map { ($0, value(&random)) })
    }

    /// `base` as one side edited it: each field kept, removed, replaced or edited as a set of
    /// pointers, a few added, the order sometimes shuffled.
    static func edited(_ base: ModelValue.Object, _ random: inout SplitMix64) -> ModelValue.Object {
        var pairs: [(String, ModelValue)] = []
        for (key, value) in base {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5: pairs.append((key, value))
            case 5: break
            case 6, 7: pairs.append((key, editedPointers(value, &random)))
            default: pairs.append((key, Self.value(&random)))
            }
        }
        for key in keys where base[key] == nil && random.chance(0.3) { pairs.append((key, value(&random))) }
        if random.chance(0.3) { pairs.shuffle(using: &random) }
        return ModelValue.Object(pairs)
    }

    /// A pointer array with one member added or removed; other values as they are.
    static func editedPointers(_ value: ModelValue, _ random: inout SplitMix64) -> ModelValue {
        guard case .array(var elements) = value else { return value }
        if !elements.isEmpty && random.chance(0.5) {
            elements.remove(at: Int.random(in: 0..<elements.count, using: &random))
        } else {
            elements.insert(random.pick(members), at: Int.random(in: 0...elements.count, using: &random))
        }
        return .array(elements)
    }
}

/// The merge's rules written the obvious way: sets as arrays filtered over every candidate.
private enum ReferenceMerge {
    static func merge(base: ModelValue.Object?, local: ModelValue.Object, remote: ModelValue.Object)
        -> (merged: ModelValue.Object, conflicts: [FieldConflict])
    {
        var order: [String] = []
        for key in remote.keys + local.keys + (base?.keys ?? []) where !order.contains(key) { order.append(key) }
        var pairs: [(String, ModelValue)] = []
        var conflicts: [FieldConflict] = []
        for key in order {
            let l = local[key] ?? .null
            let r = remote[key] ?? .null
            let b: ModelValue? = base.map { $0[key] ?? .null }
            var value: ModelValue
            if l == r {
                value = l
            } else if b != nil && l == b! {
                value = r
            } else if b != nil && r == b! {
                value = l
            } else if allPointerArrays(base: base, local: local, remote: remote, key: key) {
                value = setMerge(base: b.map(elements) ?? [], local: elements(l), remote: elements(r))
                conflicts.append(FieldConflict(field: key, base: b, local: l, remote: r, merged: value, resolution: .mergedAsSet))
            } else {
                value = r
                conflicts.append(FieldConflict(field: key, base: b, local: l, remote: r, merged: value, resolution: .remoteKept))
            }
            if value == .null && remote[key] == nil { continue }
            pairs.append((key, value))
        }
        return (ModelValue.Object(pairs), conflicts)
    }

    static func setMerge(base: [ModelValue], local: [ModelValue], remote: [ModelValue]) -> ModelValue {
        let addedByLocal = local.filter { !base.contains($0) }
        let addedByRemote = remote.filter { !base.contains($0) }
        let removedByLocal = base.filter { !local.contains($0) }
        let removedByRemote = base.filter { !remote.contains($0) }
        let members = (base + addedByLocal + addedByRemote).filter {
            !removedByLocal.contains($0) && !removedByRemote.contains($0)
        }
        var result: [ModelValue] = []
        for member in remote + local where members.contains(member) && !result.contains(member) { result.append(member) }
        return .array(result)
    }

    static func allPointerArrays(base: ModelValue.Object?, local: ModelValue.Object, remote: ModelValue.Object, key: String)
        -> Bool
    {
        var values = [local[key] ?? .null, remote[key] ?? .null]
        if let base { values.append(base[key] ?? .null) }
        return values.allSatisfy { value in
            guard case .array(let elements) = value else { return false }
            return elements.allSatisfy(isPointer)
        }
    }

    static func isPointer(_ value: ModelValue) -> Bool {
        guard case .object(let object) = value else { return false }
        return Set(object.keys) == ["__type", "model", "objectId"] && object["__type"] == "ModelPointer"
            && object["model"]?.stringValue != nil && object["objectId"]?.stringValue != nil
    }

    static func elements(_ value: ModelValue) -> [ModelValue] {
        if case .array(let elements) = value { return elements }
        return []
    }

    /// The members of a pointer array as "model/objectId" texts.
    static func memberSet(_ value: ModelValue) -> Set<String> {
        Set(elements(value).map { "\($0["model"]?.stringValue ?? "")/\($0["objectId"]?.stringValue ?? "")" })
    }
}

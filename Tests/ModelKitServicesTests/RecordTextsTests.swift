import Foundation
import ModelKit
import ModelKitTestSupport
import Testing

@testable import ModelKitServices

/// A model with every kind of value a record holds, and references to its own type.
final class RecordNode: ModelObject<RecordNode.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var title = ""
        var count = 0
        var score = 0.0
        var when: Date?
        var blob: Data?
        var tags: [String] = []
        var weights: [String: Int] = [:]
        var next = ModelRef<RecordNode>()
        var links = ModelArray<RecordNode>()
    }
}

/// A model with a property named like a field Kinto keeps for itself.
final class RecordReservedName: ModelObject<RecordReservedName.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var stamp = 0
        enum CodingKeys: String, CodingKey { case stamp = "last_modified" }
    }
}

/// A model whose properties encode as one number, not as members.
final class RecordScalar: ModelObject<RecordScalar.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var value = 0
        init() {}
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }
}

/// A model that holds a model with a reserved property name.
final class RecordHolder: ModelObject<RecordHolder.Properties>, RemoteModel {
    struct Properties: ModelProperties { var held = ModelRef<RecordReservedName>() }
}

/// A model whose `encode(to:)` goes back to a container after its parent moved on, which a stream
/// cannot follow (its properties are written from a tree), with a reference in that container.
final class RecordOutOfOrder: ModelObject<RecordOutOfOrder.Properties>, RemoteModel {
    struct Properties: ModelProperties {
        var label = ""
        var next = ModelRef<RecordNode>()

        enum CodingKeys: String, CodingKey { case label, nested }
        enum NestedKeys: String, CodingKey { case next }

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            label = try container.decode(String.self, forKey: .label)
            next = try container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
                .decode(ModelRef<RecordNode>.self, forKey: .next)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            var nested = container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
            try container.encode(label, forKey: .label)
            try nested.encode(next, forKey: .next)
        }
    }
}

/// The records a save writes, straight from the models, against what ``Model/serialize(as:)``
/// says about the same graph.
@Suite("Records written straight from the models")
struct RecordTextsTests {
    static let reserved = RecordCodec.nonPropertyFields

    /// The record of each serialized model, by model id, as the save wrote them before records were
    /// written straight from the models: the header's fields, then the properties, each pointer's
    /// model id replaced by its target's object id (from `objectIds`).
    static func reference(of root: some Model, objectIds: [String: String]) throws -> [String: ModelValue.Object] {
        let entries: [ModelValue.Object]
        switch try root.serialize(as: .json) {
        case .array(let values): entries = values.compactMap { if case .object(let entry) = $0 { entry } else { nil } }
        case .object(let entry): entries = [entry]
        default: entries = []
        }
        func outgoing(_ value: ModelValue) -> ModelValue {
            switch value {
            case .array(let elements): return .array(elements.map(outgoing))
            case .object(let object):
                if object["__type"] == "ModelPointer", let model = object["model"], let id = object["modelId"]?.stringValue {
                    return ["__type": "ModelPointer", "model": model, "objectId": .string(objectIds[id] ?? "?")]
                }
                return .object(ModelValue.Object(object.map { ($0.key, outgoing($0.value)) }))
            default: return value
            }
        }
        var records: [String: ModelValue.Object] = [:]
        for entry in entries {
            var pairs: [(String, ModelValue)] = []
            for key in ["modelId", "createdAt", "updatedAt"] { pairs.append((key, entry[key] ?? .null)) }
            if case .object(let properties)? = entry["properties"] {
                for (key, value) in properties { pairs.append((key, outgoing(value))) }
            }
            records[entry["modelId"]?.stringValue ?? "?"] = ModelValue.Object(pairs)
        }
        return records
    }

    /// The model ids a record's pointers name, in order.
    static func pointers(in value: ModelValue, objectIds: [String: String], into found: inout [String]) {
        switch value {
        case .array(let elements): for element in elements { pointers(in: element, objectIds: objectIds, into: &found) }
        case .object(let object):
            if object["__type"] == "ModelPointer", let objectId = object["objectId"]?.stringValue {
                found.append(objectId)
            } else {
                for (_, element) in object { pointers(in: element, objectIds: objectIds, into: &found) }
            }
        default: break
        }
    }

    @Test("A record holds the header and the properties as members of one object; pointers name object ids")
    func recordShape() throws {
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Ann \"the\" Writer\\\n"
        writer.age = 41
        let first = Article.instance(in: context)
        first.title = "One"
        first.author = writer
        first.objectId = "given-1"
        let second = Article.instance(in: context)
        second.title = "Two"
        writer.articles = [first, second, first]
        var made = 0
        let records = try writer.recordTexts(reserved: Self.reserved) {
            made += 1
            return "made-\(made)"
        }
        #expect(records.entries.allSatisfy { $0.refusal == nil })
        #expect(records.entries.map(\.model.modelId) == [writer.modelId, first.modelId, second.modelId])
        #expect(records.entries.map(\.objectId) == ["made-1", "given-1", "made-2"])
        #expect(records.entries.map(\.isNewObjectId) == [true, false, true])
        #expect(records.entries.map(\.modelName) == ["Writer", "Article", "Article"])
        #expect(records.entries.map(\.targets) == [[1, 2, 1], [0], []])
        // Making ids is the caller's to apply: the models are untouched.
        #expect(writer.objectId == nil && second.objectId == nil)

        let root = RecordFields(jsonData: records.text[records.entries[0].range]).values
        #expect(root["modelId"] == .string(writer.modelId.description))
        #expect(root["name"] == .string("Ann \"the\" Writer\\\n"))
        #expect(root["age"] == 41)
        #expect(root["createdAt"]?["__type"] == "Date")
        let pointer: ModelValue = ["__type": "ModelPointer", "model": "Article", "objectId": "given-1"]
        #expect(root["articles"] == [pointer, ["__type": "ModelPointer", "model": "Article", "objectId": "made-2"], pointer])
        #expect(root["objectId"] == nil && root["properties"] == nil && root["model"] == nil)
        let article = RecordFields(jsonData: records.text[records.entries[1].range]).values
        #expect(article["author"] == ["__type": "ModelPointer", "model": "Writer", "objectId": "made-1"])
        // The whole text is one JSON array of the records.
        guard case .array(let all) = try ModelValue(json: records.text) else { throw RecordTextsError.notAnArray }
        #expect(all.count == 3)
    }

    @Test("Records of random graphs equal the serialized graph with pointers by object id", arguments: 0..<40)
    func randomGraphs(seed: UInt64) throws {
        var random = SplitMix64(seed: 0x5EED_0000 + seed)
        let context = ModelContext()
        let count = Int.random(in: 1...10, using: &random)
        let nodes = (0..<count).map { _ in RecordNode.instance(in: context) }
        let texts = ["", "plain", "quote \" and \\ backslash", "line\nbreak\ttab\u{1}", "émoji 🎉", "</script>"]
        for node in nodes {
            if random.chance(0.5) { node.objectId = "id-\(random.next() % 100_000)-\(ObjectIdentifier(node).hashValue)" }
            node.title = random.pick(texts)
            node.count = Int.random(in: -1_000_000...1_000_000, using: &random)
            node.score = random.pick([0, -0.5, 1e300, 3.25, .infinity, .nan, -.infinity])
            node.when =
                random.chance(0.5)
                ? Date(timeIntervalSince1970: Double(Int.random(in: 0...2_000_000_000, using: &random)) / 7) : nil
            node.blob =
                random.chance(0.5)
                ? Data((0..<Int.random(in: 0...20, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }) : nil
            node.tags = (0..<Int.random(in: 0...3, using: &random)).map { _ in random.pick(texts) }
            node.weights = Dictionary(uniqueKeysWithValues: (0..<Int.random(in: 0...3, using: &random)).map { ("k\($0)", $0) })
            node.next = random.chance(0.6) ? ModelRef(random.pick(nodes)) : ModelRef()
            node.links = ModelArray((0..<Int.random(in: 0...4, using: &random)).map { _ in random.pick(nodes) })
        }
        let root = nodes[0]
        var made = Set<String>()
        let records = try root.recordTexts(reserved: Self.reserved) {
            let id = "new-\(made.count)"
            made.insert(id)
            return id
        }
        #expect(records.entries.allSatisfy { $0.refusal == nil })
        let objectIds = Dictionary(uniqueKeysWithValues: records.entries.map { ($0.model.modelId.description, $0.objectId) })
        let reference = try Self.reference(of: root, objectIds: objectIds)
        #expect(records.entries.count == reference.count)
        #expect(records.entries.first?.model === root)
        #expect(Set(records.entries.filter(\.isNewObjectId).map(\.objectId)) == made)
        for entry in records.entries {
            #expect(entry.isNewObjectId == (entry.model.objectId == nil))
            if !entry.isNewObjectId { #expect(entry.objectId == entry.model.objectId) }
            let fields = RecordFields(jsonData: records.text[entry.range]).values
            #expect(fields == reference[entry.model.modelId.description], "seed \(seed), \(entry.objectId)")
            var named: [String] = []
            Self.pointers(in: .object(fields), objectIds: objectIds, into: &named)
            #expect(entry.targets.map { records.entries[$0].objectId } == named, "seed \(seed)")
        }
    }

    @Test("A property named like a server or header field, or properties that are no object, are refused naming the model")
    func refusals() throws {
        let context = ModelContext()
        let node = RecordNode.instance(in: context)
        let reserved = RecordReservedName.instance(in: context)
        reserved.stamp = 3
        let scalar = RecordScalar.instance(in: context)
        scalar.value = 7
        let records = try reserved.recordTexts(reserved: Self.reserved) { "made" }
        #expect(records.entries.first?.refusal?.found == "a property 'last_modified'")
        #expect(try scalar.recordTexts(reserved: Self.reserved) { "made" }.entries.first?.refusal?.found == "a single value")
        #expect(try node.recordTexts(reserved: Self.reserved) { "made" }.entries.first?.refusal == nil)
        // The refusal is the record's own: the model holding it can be written.
        let holder = RecordHolder.instance(in: context)
        holder.held = ModelRef(reserved)
        let held = try holder.recordTexts(reserved: Self.reserved) { "made" }
        #expect(held.entries.map { $0.refusal == nil } == [true, false])
    }

    @Test("Properties written from a tree (containers used out of order) name their targets by object id too")
    func treeFallbackPointers() throws {
        let context = ModelContext()
        let root = RecordOutOfOrder.instance(in: context)
        root.label = "scrambled"
        let target = RecordNode.instance(in: context)
        target.title = "target"
        root.next = ModelRef(target)
        var made = 0
        let records = try root.recordTexts(reserved: Self.reserved) {
            made += 1
            return "made-\(made)"
        }
        #expect(records.entries.count == 2)
        #expect(records.entries.map(\.targets) == [[1], []])
        #expect(records.entries.map(\.objectId) == ["made-1", "made-2"])
        let fields = RecordFields(jsonData: records.text[records.entries[0].range]).values
        #expect(fields["label"] == "scrambled")
        let objectId = records.entries[1].objectId
        #expect(fields["nested"] == ["next": ["__type": "ModelPointer", "model": "RecordNode", "objectId": .string(objectId)]])
        let objectIds = Dictionary(uniqueKeysWithValues: records.entries.map { ($0.model.modelId.description, $0.objectId) })
        let reference = try Self.reference(of: root, objectIds: objectIds)
        #expect(fields == reference[root.modelId.description])
    }

    @Test("Saving a model that cannot be a record fails before anything is sent, and takes back the ids it gave")
    func refusedSaves() async throws {
        let service = KintoService(url: URL(string: "http://127.0.0.1:9/v1")!, timeout: .seconds(120))
        let context = ModelContext()
        let reserved = RecordReservedName.instance(in: context)
        let error = await #expect(throws: ServiceError.self) { try await service.save(reserved) }
        #expect(error?.code == .invalidModel)
        #expect(error?.description.contains("last_modified") == true)
        #expect(error?.record?.collection == "RecordReservedName")
        #expect(reserved.objectId == nil)
        let scalar = RecordScalar.instance(in: context)
        let scalarError = await #expect(throws: ServiceError.self) { try await service.save(scalar) }
        #expect(scalarError?.code == .invalidModel)
        #expect(scalar.objectId == nil && scalar.modelState == .new)
        // A model that cannot be a record, reached but not written (a placeholder without
        // changes), does not stop the save; one with changes does.
        let holder = RecordHolder.instance(in: context)
        let changed = RecordReservedName.instance(in: context)
        changed.stamp = 4
        holder.held = ModelRef(changed)
        let holderError = await #expect(throws: ServiceError.self) { try await service.save(holder) }
        #expect(holderError?.code == .invalidModel)
        #expect(holderError?.record?.collection == "RecordReservedName")
        #expect(holder.objectId == nil && changed.objectId == nil)
        #expect(service.metrics.requests == 0)
        let offline = KintoService(url: URL(string: "http://127.0.0.1:9/v1")!, timeout: .seconds(120), retry: .never)
        let other = ModelContext()
        let quiet = RecordHolder.instance(in: other)
        quiet.held = ModelRef(RecordReservedName.instance(objectId: "r-2", in: other))
        let sendError = await #expect(throws: ServiceError.self) { try await offline.save(quiet) }
        #expect(sendError?.code == .unreachable)
        #expect(offline.metrics.requests == 1)
    }

    @Test("Fields made from values write them as JSON text and read them back")
    func fieldsFromValues() throws {
        let fields: RecordFields = ["title": "Hello \"you\"", "stars": 3, "tags": ["a", "b"]]
        #expect(fields.values["stars"] == 3)
        #expect(try ModelValue(json: fields.jsonData) == .object(fields.values))
        #expect(fields.description == String(decoding: fields.jsonData, as: UTF8.self))
        #expect(RecordFields(jsonData: Data("[1]".utf8)).values.isEmpty)
    }

    @Test(
        "Batches take writes in order, at most the limit, under the byte budget unless one write alone is over it",
        arguments: 0..<30)
    func batchBoundaries(seed: UInt64) {
        var random = SplitMix64(seed: 0xBA7C_0000 + seed)
        let writes: [RecordWrite] = (0..<Int.random(in: 0...60, using: &random)).map { index in
            let id = RecordID(collection: "Note", id: "n\(index)")
            if random.chance(0.2) { return .delete(id, expected: nil) }
            return .create(
                id, fields: ["text": .string(String(repeating: "x", count: Int.random(in: 0...3_000, using: &random)))])
        }
        let limit = Int.random(in: 1...30, using: &random)
        let bytes = Int.random(in: 500...20_000, using: &random)
        func size(_ write: RecordWrite) -> Int { 256 + (write.fields?.jsonData.count ?? 0) }
        var start = 0
        var chunks: [Range<Int>] = []
        while start < writes.count {
            let end = KintoService.chunkEnd(writes, from: start, limit: limit, bytes: bytes)
            chunks.append(start..<end)
            start = end
        }
        #expect(chunks.map(\.count).reduce(0, +) == writes.count, "seed \(seed)")
        for chunk in chunks {
            let total = chunk.map { size(writes[$0]) }.reduce(0, +)
            #expect(!chunk.isEmpty && chunk.count <= limit, "seed \(seed)")
            #expect(total <= bytes || chunk.count == 1, "seed \(seed)")
            // Nothing more fits: the next write would break the count or the budget.
            if chunk.upperBound < writes.count {
                #expect(chunk.count == limit || total + size(writes[chunk.upperBound]) > bytes, "seed \(seed)")
            }
        }
    }

    @Test("A batch body is one JSON object whose requests carry each record's text as it is")
    func batchBody() throws {
        let created = RecordID(collection: "Note", id: "a-1")
        let updated = RecordID(collection: "Note", id: "b-2")
        let deleted = RecordID(collection: "Note", id: "c\"3")
        let writes: [RecordWrite] = [
            .create(created, fields: ["text": "new"]),
            .update(updated, fields: ["text": "changed\n"], expected: RemoteVersion("17")),
            .delete(deleted, expected: nil), .delete(created, expected: RemoteVersion("18")),
        ]
        let body = try ModelValue(json: BatchBody(writes, path: { "/records/\($0.id)" }).data)
        let expected: ModelValue = [
            "requests": [
                [
                    "method": "PUT", "path": "/records/a-1", "headers": ["If-None-Match": "*"],
                    "body": ["data": ["text": "new"]],
                ],
                [
                    "method": "PUT", "path": "/records/b-2", "headers": ["If-Match": "\"17\""],
                    "body": ["data": ["text": "changed\n"]],
                ],
                ["method": "DELETE", "path": "/records/c\"3", "headers": [:]],
                ["method": "DELETE", "path": "/records/a-1", "headers": ["If-Match": "\"18\""]],
            ]
        ]
        #expect(body == expected)
    }
}

@Suite("Random ids for new records")
struct RandomUUIDsTests {
    @Test("Ids are distinct version-4 UUIDs, also past a refill of the random bytes, and their text reads back")
    func distinctAndWellFormed() throws {
        var random = RandomUUIDs()
        var seen = Set<String>()
        for _ in 0..<1_000 {
            let text = random.makeString()
            #expect(text.utf8.count == 36)
            let uuid = try #require(UUID(uuidString: text))
            #expect(uuid.uuidString == text)
            #expect(uuid.uuid.6 >> 4 == 4 && uuid.uuid.8 >> 6 == 2)
            seen.insert(text)
        }
        #expect(seen.count == 1_000)
        #expect(Set((0..<600).map { _ in random.make() }).count == 600)
    }

    @Test("An echoed path names a record exactly when it ends with the record's path in the service's bucket")
    func echoedPaths() {
        let service = KintoService(url: URL(string: "http://127.0.0.1:9/v1")!, bucket: "b")
        let id = RecordID(collection: "Note", id: "a-1")
        #expect(service.echoes("/v1/buckets/b/collections/Note/records/a-1", id))
        #expect(service.echoes(service.recordPath(id), id))
        #expect(!service.echoes("/v1/buckets/b/collections/Note/records/a-2", id))
        #expect(!service.echoes("/v1/buckets/c/collections/Note/records/a-1", id))
        #expect(!service.echoes("/v1/buckets/b/collections/Other/records/a-1", id))
        #expect(!service.echoes("records/a-1", id))
        #expect(!service.echoes("", id))
        #expect(!service.echoes("/v1/buckets/bb/collections/Note/records/xa-1", RecordID(collection: "Note", id: "a-1")))
        #expect(service.echoes("/buckets/b/collections/Nöte/records/é-1", RecordID(collection: "Nöte", id: "é-1")))
        #expect(!service.echoes("/buckets/b/collections/Note/records/é-1", RecordID(collection: "Nöte", id: "é-1")))
    }

    @Test("Header names match whatever the case of their letters, and only letters fold")
    func headerNames() {
        let response = HTTPClient.Response(
            status: 200, headers: ["Retry-After": "3", "backoff": "5", "X-[Odd]": "1"], body: Data(), attempts: 1)
        #expect(response.header("retry-after") == "3")
        #expect(response.header("RETRY-AFTER") == "3")
        #expect(response.header("Backoff") == "5")
        #expect(response.header("x-[odd]") == "1")
        // '[' and '{' differ only in the bit that makes letters lower case.
        #expect(response.header("x-{odd}") == nil)
        #expect(response.header("Retry-Afte") == nil)
        #expect(response.header("Retry-Aftér") == nil)
        #expect(!HTTPClient.Response.sameName("é", "É"))
        #expect(HTTPClient.Response.sameName("", ""))
    }
}

enum RecordTextsError: Error {
    case notAnArray
}

import Foundation
import ModelKit
import ModelKitTestSupport

// Models used across the tests. Each test works in a context of its own (see `inFreshContext`),
// because Swift Testing runs tests in parallel and the context stack is process-wide.

final class Author: ModelObject<Author.Properties> {
    struct Properties: ModelProperties, Equatable {
        var name = ""
        var email = ""
        var birthday: Date?
        var age = 0
        var displayEmail = false
        var avatarURL: URL?
        var posts = ModelArray<Post>()
    }
    /// Not persisted: lives outside `Properties`.
    var lifetime: LifetimeToken?
}

final class Post: ModelObject<Post.Properties> {
    struct Properties: ModelProperties, Equatable {
        var title = ""
        var body = ""
        var author = ModelRef<Author>()
        var tags: [String] = []
    }
    var lifetime: LifetimeToken?
}

/// The seed's example of a model pointing to itself.
final class VeryConvolutedExample: ModelObject<VeryConvolutedExample.Properties> {
    struct Properties: ModelProperties, Equatable {
        var circular = ModelRef<VeryConvolutedExample>()
    }
}

/// A link in a long chain.
final class Node: ModelObject<Node.Properties> {
    struct Properties: ModelProperties, Equatable {
        var value = 0
        var next = ModelRef<Node>()
    }
    var lifetime: LifetimeToken?
}

/// A model with a custom name. Not "Writer": the service tests' `Writer` registers that name,
/// and the sanitizer's run puts both targets' suites in one process, where the registry is
/// shared (whichever registered first, the other failed).
final class RenamedAuthor: ModelObject<RenamedAuthor.Properties> {
    struct Properties: ModelProperties, Equatable { var name = "" }
    override class var modelName: String { "Scribe" }
}

/// A model that never joins a context by itself.
final class Draft: ModelObject<Draft.Properties>, ContextFreeModel {
    struct Properties: ModelProperties, Equatable { var text = "" }
}

/// A model without references, for the dictionary form.
final class Note: ModelObject<Note.Properties> {
    struct Properties: ModelProperties, Equatable {
        var text = ""
        var count = 0
    }
    /// A stored property of the class: not persisted.
    var scratch = "not persisted"
}

/// A model that leaves a property of its struct out of persistence with CodingKeys.
final class Cached: ModelObject<Cached.Properties> {
    struct Properties: ModelProperties, Equatable {
        var kept = ""
        var derived = 0
        enum CodingKeys: String, CodingKey { case kept }
    }
}

enum Mood: String, Codable, Equatable { case happy, grumpy, 😀 }
enum Priority: Int, Codable, Equatable { case low = 1, high = 10 }
enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rectangle(width: Double, height: Double)
    case none
}

struct Address: Codable, Equatable {
    var street = ""
    var city = ""
    var zip: String?
    var coordinates = GeoPoint(latitude: 0, longitude: 0)
}

/// Every supported property type.
final class Everything: ModelObject<Everything.Properties> {
    struct Properties: ModelProperties, Equatable {
        var string = ""
        var int = 0
        var int8: Int8 = 0
        var int16: Int16 = 0
        var int32: Int32 = 0
        var int64: Int64 = 0
        var uint: UInt = 0
        var uint8: UInt8 = 0
        var uint16: UInt16 = 0
        var uint32: UInt32 = 0
        var uint64: UInt64 = 0
        var double = 0.0
        var float: Float = 0
        var bool = false
        var date = Date(timeIntervalSinceReferenceDate: 0)
        var data = Data()
        var url = URL(string: "https://example.com")!
        var uuid = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        var mood = Mood.happy
        var priority = Priority.low
        var shape = Shape.none
        var optionalString: String?
        var optionalInt: Int?
        var optionalDouble: Double?
        var optionalDate: Date?
        var optionalData: Data?
        var optionalURL: URL?
        var optionalUUID: UUID?
        var optionalMood: Mood?
        var optionalAddress: Address?
        var optionalGeo: GeoPoint?
        var strings: [String] = []
        var ints: [Int] = []
        var doubles: [Double] = []
        var dates: [Date] = []
        var optionals: [Int?] = []
        var nested: [[String]] = []
        var byName: [String: Int] = [:]
        var byNumber: [Int: String] = [:]
        var byUUID: [UUID: Bool] = [:]
        var address = Address()
        var addresses: [Address] = []
        var location = GeoPoint(latitude: 0, longitude: 0)
    }
}

/// A non-model class whose Codable conformance recurses forever when it points to itself.
final class LoopingBox: Codable, Equatable {
    var next: LoopingBox?
    static func == (lhs: LoopingBox, rhs: LoopingBox) -> Bool { lhs === rhs }
}

final class HasLoop: ModelObject<HasLoop.Properties> {
    struct Properties: ModelProperties {
        var box: LoopingBox?
    }
}

/// Runs `body` with a new context as the current one, for this test only.
@MainActor func inFreshContext<Result>(_ body: (ModelContext) throws -> Result) rethrows -> Result {
    let context = ModelContext()
    return try ModelContext.withCurrent(context) { try body(context) }
}

/// Parses JSON text written in a test.
func json(_ text: String) throws -> ModelValue {
    try ModelValue(json: Data(text.utf8))
}

/// Builds a small blog: `authorCount` authors with `postsPerAuthor` posts each, wired both ways.
@discardableResult
func makeBlog(authors authorCount: Int, postsPerAuthor: Int, in context: ModelContext) -> [Author] {
    (0..<authorCount).map { a in
        let author = Author.instance(in: context)
        author.name = "Author \(a)"
        author.age = 20 + a
        for p in 0..<postsPerAuthor {
            let post = Post.instance(in: context)
            post.title = "Post \(a)-\(p)"
            post.tags = ["swift", "tag\(p)", "a\(a)"]
            post.author = author
            author.posts.append(post)
        }
        return author
    }
}

/// A value whose hand-written Codable uses super encoders, with CodingKeys that have no `super`.
struct Layered: Codable, Equatable {
    var base = 1
    var own = "x"
    enum CodingKeys: String, CodingKey { case own }

    init() {}

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        own = try container.decode(String.self, forKey: .own)
        base = try container.superDecoder().singleValueContainer().decode(Int.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(own, forKey: .own)
        var base = container.superEncoder().singleValueContainer()
        try base.encode(self.base)
    }
}

final class HasLayers: ModelObject<HasLayers.Properties> {
    struct Properties: ModelProperties, Equatable { var layered = Layered() }
}

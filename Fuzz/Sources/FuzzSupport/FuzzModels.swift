import Foundation
import ModelKit

// Model types that use every kind of property the readers decode: the fuzzer's mutations of
// their files reach every reading path.

public final class FuzzAuthor: ModelObject<FuzzAuthor.Properties> {
    public struct Properties: ModelProperties, Equatable {
        var name = ""
        var age = 0
        var born: Date?
        var site: URL?
        var posts = ModelArray<FuzzPost>()
        var best = ModelRef<FuzzPost>()
        public init() {}
    }
}

public final class FuzzPost: ModelObject<FuzzPost.Properties> {
    public struct Properties: ModelProperties, Equatable {
        var title = ""
        var score = 0.0
        var tags: [String] = []
        var author = ModelRef<FuzzAuthor>()
        public init() {}
    }
}

public struct FuzzPlace: Codable, Equatable {
    var street = ""
    var zip: String?
    var point = GeoPoint(latitude: 0, longitude: 0)
}

public final class FuzzEverything: ModelObject<FuzzEverything.Properties> {
    public struct Properties: ModelProperties, Equatable {
        var small: Int8 = 0
        var large: UInt64 = 0
        var ratio: Float = 0
        var flag = false
        var blob = Data()
        var when = Date(timeIntervalSinceReferenceDate: 0)
        var numbers: [Int?] = []
        var grid: [[String]] = []
        var byName: [String: Int] = [:]
        var byNumber: [Int: String] = [:]
        var place = FuzzPlace()
        var places: [FuzzPlace] = []
        public init() {}
    }
}

public enum FuzzModels {
    /// Registers the fuzz models once per process.
    public static let registered: Void = {
        try! ModelRegistry.register(FuzzAuthor.self, FuzzPost.self, FuzzEverything.self)
    }()

    /// A small graph of every fuzz model, in `context`.
    public static func makeGraph(in context: ModelContext) {
        _ = registered
        let author = FuzzAuthor.instance(in: context)
        author.name = "Ada ünï 😀"
        author.age = 36
        author.born = Date(timeIntervalSinceReferenceDate: -5e9 + 0.25)
        author.site = URL(string: "https://example.com/ada")
        for index in 0..<3 {
            let post = FuzzPost.instance(in: context)
            post.title = "Post \(index)"
            post.score = Double(index) / 3
            post.tags = ["swift", "tag\(index)"]
            post.author = author
            author.posts.append(post)
        }
        author.best = author.posts.first
        let everything = FuzzEverything.instance(in: context)
        everything.small = -7
        everything.large = .max
        everything.ratio = 1.5
        everything.flag = true
        everything.blob = Data([0, 1, 2, 255])
        everything.numbers = [1, nil, -3]
        everything.grid = [["a"], [], ["b", "c"]]
        everything.byName = ["one": 1]
        everything.byNumber = [2: "two"]
        everything.places = [FuzzPlace(street: "Main", zip: nil, point: GeoPoint(latitude: 1, longitude: 2))]
    }
}

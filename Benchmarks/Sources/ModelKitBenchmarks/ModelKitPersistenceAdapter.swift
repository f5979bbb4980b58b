import Foundation
import ModelKit

// ModelKit's side of the write and load benchmarks, in one place, so that moving them to the
// whole-graph file API of issue #3 is an edit of this file only.
//
// Today's implementation uses the API that exists on main: serializing from the `BenchBlog` root
// (which reaches every author and post), `jsonData()` for JSON, and `serialize(as:
// .propertyList)` + `PropertyListSerialization` for binary property lists; loading parses the file
// and rebuilds the graph with `BenchBlog.instance(from:in:)` in a new context.
//
// When `ModelContext.write(to:format:)` and `ModelContext.load(from:)` land, swap:
//   - the body of `modelKitWrite(_:to:format:)` for `try context.write(to: url, format: …)`,
//     mapping `.json` and `.binaryPropertyList` to the library's format cases;
//   - the body of `modelKitLoad(from:format:)` for `try ModelContext.load(from: url)` (with the
//     format if the API takes one);
//   - and delete `PersistenceFormat` in favour of the library's format type if it has the same
//     cases.
// Nothing else in the suite calls ModelKit's serialization for these four benchmarks.

/// The file formats of the write and load benchmarks.
enum PersistenceFormat: Sendable {
    case json
    case binaryPropertyList
}

/// An adapter failure: a context without the blog, or a file without a graph.
struct AdapterError: Error, CustomStringConvertible {
    let description: String
}

/// Writes every model of `context` to the file at `url` (replacing it atomically).
func modelKitWrite(_ context: ModelContext, to url: URL, format: PersistenceFormat) throws {
    // Today: the root that reaches the whole graph (an O(n) scan of the context, small next to
    // the write itself).
    guard let blog = context.models(of: BenchBlog.self).first else {
        throw AdapterError(description: "the context holds no blog to write")
    }
    let data: Data
    switch format {
    case .json:
        data = try blog.jsonData()
    case .binaryPropertyList:
        let tree = try blog.serialize(as: .propertyList)
        data = try PropertyListSerialization.data(fromPropertyList: tree.propertyListObject, format: .binary, options: 0)
    }
    try data.write(to: url, options: .atomic)
}

/// Reads the file at `url` that ``modelKitWrite(_:to:format:)`` wrote into a new context.
func modelKitLoad(from url: URL, format: PersistenceFormat) throws -> ModelContext {
    let data = try Data(contentsOf: url)
    let context = ModelContext()
    switch format {
    case .json:
        _ = try BenchBlog.instance(fromJSON: data, in: context)
    case .binaryPropertyList:
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        _ = try BenchBlog.instance(from: ModelValue(propertyList: object), in: context)
    }
    return context
}

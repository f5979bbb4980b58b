import Foundation
import Testing

@testable import ModelKit

/// Every writer reserves room before writing bytes without checks; a writer that reserves fewer
/// bytes than it writes runs past the buffer only when the write meets the end of its memory. The
/// in-memory buffer starts at 64 KiB, so these tests slide a graph's objects, byte by byte, across
/// that boundary in each format, and read each result back. (Debug builds also check every
/// unchecked write against its reservation: see `OutputBuffer.reserve(_:)`.)
@Suite("Writers at the end of a buffer")
@MainActor
struct WriterBoundaryTests {
    /// A note of `fillerLength` characters followed by a few authors and posts that point at each
    /// other, so that model ids (in headers and in pointers) follow the note closely.
    static func graph(fillerLength: Int, in context: ModelContext) -> [any Model] {
        let filler = Note.instance(in: context)
        filler.text = String(repeating: "x", count: fillerLength)
        var models: [any Model] = [filler]
        for index in 0..<6 {
            let author = Author.instance(in: context)
            author.name = "a\(index)"
            let post = Post.instance(in: context)
            post.author = author
            author.posts.append(post)
            models += [author, post]
        }
        return models
    }

    /// Whether `loaded` holds the same models, with the same ids and texts, as `original`.
    static func expectSame(_ loaded: ModelContext, as original: [any Model], _ comment: Comment) {
        for model in original {
            let copy = loaded.model(withId: model.modelId)
            #expect(copy != nil, comment)
            if let note = model as? Note { #expect((copy as? Note)?.text == note.text, comment) }
            if let post = model as? Post {
                #expect((copy as? Post)?.author?.modelId == post.author?.modelId, comment)
            }
        }
    }

    // The note's text ends anywhere from 600 bytes before the buffer's first 64 KiB to just past
    // it, so each id written after it meets the end of the buffer at every offset.
    static let fillerLengths = Array((65_536 - 700)...(65_536 - 40))

    @Test("binary property lists are whole when a model id meets the end of the buffer")
    func binaryPropertyListAtTheBoundary() throws {
        for length in Self.fillerLengths {
            let context = ModelContext()
            let models = Self.graph(fillerLength: length, in: context)
            let data = try context.data(format: .binaryPropertyList)
            let loaded = ModelContext()
            try loaded.load(data)
            Self.expectSame(loaded, as: models, "filler of \(length) bytes")
        }
    }

    @Test("JSON is whole when a model id meets the end of the buffer")
    func jsonAtTheBoundary() throws {
        for length in Self.fillerLengths {
            let context = ModelContext()
            let models = Self.graph(fillerLength: length, in: context)
            let loaded = ModelContext()
            try loaded.load(try context.data(format: .json))
            Self.expectSame(loaded, as: models, "filler of \(length) bytes")
            let copy = ModelContext()
            _ = try Note.instance(fromJSON: try models[0].jsonData(), in: copy)
            #expect((copy.model(withId: models[0].modelId) as? Note)?.text.count == length)
        }
    }

    @Test("snapshots merge whole when a model id meets the end of the buffer")
    func snapshotsAtTheBoundary() throws {
        for length in Self.fillerLengths {
            let context = ModelContext()
            let models = Self.graph(fillerLength: length, in: context)
            let snapshot = try context.snapshot(of: models)
            let merged = ModelContext()
            try merged.merge(snapshot)
            Self.expectSame(merged, as: models, "filler of \(length) bytes")
        }
    }
}

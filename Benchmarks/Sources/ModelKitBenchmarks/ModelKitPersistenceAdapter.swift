import Foundation
import ModelKit

// ModelKit's side of the write and load benchmarks, in one place: the whole-graph file API.
// `ModelContext.write(to:format:)` writes every model of the context atomically (streaming, in
// chunks); `ModelContext.load(from:)` reads the file into memory, detects the format from its bytes and
// loads all or nothing.

/// Writes every model of `context` to the file at `url` (replacing it atomically).
func modelKitWrite(_ context: ModelContext, to url: URL, format: PersistenceFormat) throws {
    try context.write(to: url, format: format)
}

/// Reads the file at `url` that ``modelKitWrite(_:to:format:)`` wrote into a new context.
func modelKitLoad(from url: URL, format: PersistenceFormat) throws -> ModelContext {
    let context = ModelContext()
    try context.load(from: url)
    return context
}

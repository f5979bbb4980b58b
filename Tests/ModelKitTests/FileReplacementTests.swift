import Foundation
import Testing

@testable import ModelKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("File replacement")
struct FileReplacementTests {
    @Test("a replaced file is released on another thread, and no descriptor stays open")
    func replacedFilesAreReleased() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let context = ModelContext()
            let note = Note.instance(in: context)
            for generation in 0..<20 {
                note.count = generation
                try context.write(to: url)
            }
            AtomicFile.waitForReleases()
            let reloaded = ModelContext()
            try reloaded.load(from: url)
            #expect(reloaded.models(of: Note.self).map(\.count) == [19])
            #if os(Linux)
                // A replaced file still held open would show as "<path> (deleted)".
                let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
                let targets = descriptors.compactMap {
                    try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
                }
                #expect(!targets.contains { $0.hasPrefix(directory.path) })
            #endif
        }
    }

    @Test("a write over a directory fails, leaves the directory and no temporary file")
    func writeOverDirectory() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try Data("keep".utf8).write(to: url.appendingPathComponent("inside"))
            let context = ModelContext()
            Note.instance(in: context).text = "new"
            #expect(throws: CocoaError.self) { try context.write(to: url) }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["graph.json"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["inside"])
        }
    }

    @Test("a write over a named pipe replaces it without waiting for a writer", .timeLimit(.minutes(1)))
    func writeOverPipe() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            try #require(mkfifo(url.path, 0o644) == 0)
            let context = ModelContext()
            Note.instance(in: context).text = "over a pipe"
            try context.write(to: url)
            let reloaded = ModelContext()
            try reloaded.load(from: url)
            #expect(reloaded.models(of: Note.self).map(\.text) == ["over a pipe"])
        }
    }

    @Test("a write over a symbolic link replaces the link and leaves the file it pointed to")
    func writeOverLink() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let elsewhere = directory.appendingPathComponent("elsewhere.txt")
            try Data("untouched".utf8).write(to: elsewhere)
            try FileManager.default.createSymbolicLink(at: url, withDestinationURL: elsewhere)
            let context = ModelContext()
            Note.instance(in: context).text = "new"
            try context.write(to: url)
            #expect(try Data(contentsOf: elsewhere) == Data("untouched".utf8))
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) == nil)
            let reloaded = ModelContext()
            try reloaded.load(from: url)
            #expect(reloaded.models(of: Note.self).map(\.text) == ["new"])
        }
    }
}

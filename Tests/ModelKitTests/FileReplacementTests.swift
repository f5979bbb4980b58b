import Foundation
import ModelKitTestSupport
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

    /// Writes a note over `url`, which must be refused as not a regular file, and checks that
    /// nothing was left in `directory` but what `expected` lists, and that `url` is still of
    /// `kind` (`S_IFIFO`…) when given.
    func expectRefused(_ url: URL, in directory: URL, leaving expected: [String], kind: mode_t? = nil) throws {
        let context = ModelContext()
        Note.instance(in: context).text = "new"
        let error = #expect(throws: PersistenceError.self) { try context.write(to: url) }
        #expect(error?.code == .notARegularFile)
        #expect(error?.path == url.path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == expected)
        if let kind {
            var status = stat()
            #expect(lstat(url.path, &status) == 0 && status.st_mode & S_IFMT == kind)
        }
    }

    @Test("a write over a directory fails, leaves the directory and no temporary file")
    func writeOverDirectory() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try Data("keep".utf8).write(to: url.appendingPathComponent("inside"))
            try expectRefused(url, in: directory, leaving: ["graph.json"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["inside"])
        }
    }

    @Test("a write over a named pipe is refused without waiting for a writer, and the pipe stays", .hangBackstop)
    func writeOverPipe() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            try #require(mkfifo(url.path, 0o644) == 0)
            try expectRefused(url, in: directory, leaving: ["graph.json"], kind: S_IFIFO)
        }
    }

    @Test("a write over a socket is refused and the socket stays")
    func writeOverSocket() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let socket = try bindSocket(at: url.path)
            defer { close(socket) }
            try expectRefused(url, in: directory, leaving: ["graph.json"], kind: S_IFSOCK)
        }
    }

    @Test("a write over a device node is refused and the device stays")
    func writeOverDevice() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("null")
            if getuid() == 0 {
                // A device like /dev/null, made where the test may break it (`makedev` is a C
                // macro: its encoding of Linux's 1, 3 and Darwin's 3, 2).
                #if os(Linux)
                    let null = dev_t(1 << 8 | 3)
                #else
                    let null = dev_t(3 << 24 | 2)
                #endif
                try #require(mknod(url.path, S_IFCHR | 0o666, null) == 0)
                try expectRefused(url, in: directory, leaving: ["null"], kind: S_IFCHR)
            } else {
                // Without root no device can be made; the real one is safe to aim at, since
                // only root could replace it.
                let context = ModelContext()
                let error = #expect(throws: PersistenceError.self) {
                    try context.write(to: URL(fileURLWithPath: "/dev/null"))
                }
                #expect(error?.code == .notARegularFile)
                #expect(error?.found == "a character device")
            }
        }
    }

    @Test("a write to a URL that is not a file URL is refused and writes nothing")
    func writeToRemoteURL() throws {
        let context = ModelContext()
        Note.instance(in: context).text = "new"
        let url = try #require(URL(string: "https://example.com/modelkit-\(UUID().uuidString)/x.json"))
        let error = #expect(throws: PersistenceError.self) { try context.write(to: url) }
        #expect(error?.code == .notAFileURL)
        #expect(error?.path == url.absoluteString)
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path))
        let loadError = #expect(throws: PersistenceError.self) { try ModelContext().load(from: url) }
        #expect(loadError?.code == .notAFileURL)
    }

    @Test("a write keeps the mode of the file it replaces, and its owner where permitted")
    func modeAndOwnerKept() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let context = ModelContext()
            let note = Note.instance(in: context)
            for mode: mode_t in [0o600, 0o640, 0o604, 0o755] {
                note.count = Int(mode)
                try Data("old".utf8).write(to: url)
                try #require(chmod(url.path, mode) == 0)
                try context.write(to: url)
                var status = stat()
                try #require(stat(url.path, &status) == 0)
                #expect(status.st_mode & 0o7777 == mode)
                let reloaded = ModelContext()
                try reloaded.load(from: url)
                #expect(reloaded.models(of: Note.self).map(\.count) == [Int(mode)])
            }
            if getuid() == 0 {
                // Only root may give a file away: the replacement keeps the other owner.
                try #require(chown(url.path, 4321, 8765) == 0)
                try #require(chmod(url.path, 0o600) == 0)
                try context.write(to: url)
                var status = stat()
                try #require(stat(url.path, &status) == 0)
                #expect(status.st_uid == 4321)
                #expect(status.st_gid == 8765)
                #expect(status.st_mode & 0o7777 == 0o600)
            }
        }
    }

    @Test("a write over one name of a hard-linked file replaces that name alone; the other keeps the old contents")
    func hardLinksSplit() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let other = directory.appendingPathComponent("other.json")
            try Data("old".utf8).write(to: url)
            try FileManager.default.linkItem(at: url, to: other)
            try writeNote("new", to: url)
            #expect(try Data(contentsOf: other) == Data("old".utf8))
            #expect(try noteTexts(at: url) == ["new"])
        }
    }

    @Test("a write over a symbolic link replaces the link and leaves the file it pointed to")
    func writeOverLink() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.json")
            let elsewhere = directory.appendingPathComponent("elsewhere.txt")
            try Data("untouched".utf8).write(to: elsewhere)
            try FileManager.default.createSymbolicLink(at: url, withDestinationURL: elsewhere)
            try writeNote("new", to: url)
            #expect(try Data(contentsOf: elsewhere) == Data("untouched".utf8))
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: url.path)) == nil)
            #expect(try noteTexts(at: url) == ["new"])
        }
    }

    /// A Unix domain socket bound at `path`; the caller closes it.
    func bindSocket(at path: String) throws -> Int32 {
        #if canImport(Glibc)
            let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        try #require(descriptor >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(result == 0)
        return descriptor
    }

    /// Writes a context of one note with `text` to `url`.
    func writeNote(_ text: String, to url: URL) throws {
        let context = ModelContext()
        Note.instance(in: context).text = text
        try context.write(to: url)
    }

    /// The texts of the notes in the file at `url`.
    func noteTexts(at url: URL) throws -> [String] {
        let context = ModelContext()
        try context.load(from: url)
        return context.models(of: Note.self).map(\.text)
    }
}

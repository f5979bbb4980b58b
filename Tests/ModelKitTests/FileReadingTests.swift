import Foundation
import Testing
import ModelKitTestSupport

@testable import ModelKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("File reading")
struct FileReadingTests {
    init() throws {
        try ModelRegistry.register(Note.self)
    }

    /// A file of `count` notes at `url`, and its bytes.
    @discardableResult
    func writeNotes(_ count: Int, to url: URL, format: PersistenceFormat = .json) throws -> Data {
        let context = ModelContext()
        for index in 0..<count {
            let note = Note.instance(in: context)
            note.text = String(repeating: "n", count: 200)
            note.count = index
        }
        try context.write(to: url, format: format)
        return try Data(contentsOf: url)
    }

    @Test("the bytes a load reads stay valid when the file is truncated before they are parsed")
    func truncatedAfterReading() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph.plist")
            try writeNotes(20_000, to: url, format: .binaryPropertyList)
            let data = try Persistence.contents(of: url)
            // A mapped file would now raise SIGBUS on the first page past the new end.
            try #require(truncate(url.path, 0) == 0)
            let context = ModelContext()
            try context.load(data)
            #expect(context.models(of: Note.self).count == 20_000)
        }
    }

    @Test(
        "loads of a file that another thread truncates and rewrites all the while load whole or fail with a typed error",
        .hangBackstop, arguments: [PersistenceFormat.json, .binaryPropertyList])
    func truncatedDuringLoads(format: PersistenceFormat) throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("graph")
            let contents = try writeNotes(3_000, to: url, format: format)
            let stop = Stopper()
            let writer = Thread {
                // Not `write(to:)`, which would replace the file: this changes the one being read.
                let descriptor = open(url.path, O_WRONLY)
                var generator = SplitMix64(seed: 14)
                while !stop.isSet {
                    _ = ftruncate(descriptor, off_t(generator.next() % UInt64(contents.count)))
                    contents.withUnsafeBytes { _ = pwrite(descriptor, $0.baseAddress, $0.count, 0) }
                }
                close(descriptor)
                stop.finished.signal()
            }
            writer.start()
            var loaded = 0
            var failed = 0
            for _ in 0..<150 {
                let context = ModelContext()
                let marker = Note.instance(in: context)
                do {
                    try context.load(from: url)
                    loaded += 1
                    #expect(context.models(of: Note.self).count == 3_001)
                } catch is SerializationError {
                    failed += 1
                    #expect(context.models(of: Note.self).map(\.modelId) == [marker.modelId])
                }
            }
            stop.set()
            stop.finished.wait()
            #expect(loaded + failed == 150)
        }
    }

    final class Stopper: @unchecked Sendable {
        // Safe to share: `flag` is only touched under `lock`.
        private let lock = NSLock()
        private var flag = false
        let finished = DispatchSemaphore(value: 0)
        var isSet: Bool { lock.withLock { flag } }
        func set() { lock.withLock { flag = true } }
    }

    @Test("a load from a named pipe, a directory or a device is refused without blocking", .hangBackstop)
    func nonRegularSources() throws {
        try withTemporaryDirectory { directory in
            let pipe = directory.appendingPathComponent("pipe")
            try #require(mkfifo(pipe.path, 0o644) == 0)
            for url in [pipe, directory, URL(fileURLWithPath: "/dev/zero")] {
                let context = ModelContext()
                let error = #expect(throws: PersistenceError.self) { try context.load(from: url) }
                #expect(error?.code == .notARegularFile)
                #expect(error?.operation == "read")
                #expect(context.isEmpty)
            }
        }
    }

    @Test("a missing file is a fileNotFound error carrying its errno")
    func missingFile() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("absent.json")
            let error = #expect(throws: PersistenceError.self) { try ModelContext().load(from: url) }
            #expect(error?.code == .fileNotFound)
            #expect(error?.errorNumber == ENOENT)
            #expect(error?.path == url.path)
            #expect(error?.description.hasPrefix(url.path + ": open failed: expected an existing file") == true)
        }
    }

    @Test("a 4 GiB file of zeros fails at byte 0 after its first block, without reading the rest", .hangBackstop)
    func fileOfZeros() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("zeros.json")
            // Sparse: it takes no room on the disk, but reading it would take 4 GiB of memory.
            try #require(FileManager.default.createFile(atPath: url.path, contents: nil))
            try #require(truncate(url.path, 4 << 30) == 0)
            let error = #expect(throws: SerializationError.self) { try ModelContext().load(from: url) }
            #expect(error?.code == .malformedInput)
            #expect(error?.byteOffset == 0)
            #expect(error?.found == "byte 0x0")
        }
    }

    @Test("a binary property list of another version than 00 is refused, from a file or from data")
    func otherPlistVersions() throws {
        var plist = PlistBuilder()
        let array = plist.array([])
        let data = plist.data(top: array, magic: "bplist01")
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("v1.plist")
            try data.write(to: url)
            let error = #expect(throws: SerializationError.self) { try ModelContext().load(from: url) }
            #expect(error?.code == .unsupportedVersion)
            #expect(error?.byteOffset == 6)
            #expect(error?.found == #"version "01""#)
        }
        #expect(throws: SerializationError.self) { try ModelContext().load(data) }
        try ModelContext().load(plist.data(top: array))
    }
}

extension FileReadingTests {
    /// The id table's slots after loading `data` with the general loader (and the error, if any).
    func idSlots(after data: Data) -> (slots: Int, failed: Bool) {
        var slots = 0
        var failed = false
        do {
            try withModelSource(for: data) { source in
                let loader = GraphLoader(context: ModelContext(), options: DeserializationOptions(), source: source)
                defer { slots = loader.positions.capacity }
                try loader.loadAll()
            }
        } catch {
            failed = true
        }
        return (slots, failed)
    }

    @Test("a JSON file that fails in its first model has not sized tables from its length")
    func noTablesBeforeModels() throws {
        // 8 MiB: sized from its length, the id table would take 16,384 ids (32,768 slots).
        let head = #"{"format":"ModelKit","version":1,"models":[{"model":"Note","modelId":"not an id"}"#
        let data = Data(head.utf8) + Data(repeating: UInt8(ascii: " "), count: 8 << 20) + Data("]}".utf8)
        let result = idSlots(after: data)
        #expect(result.failed)
        #expect(result.slots <= 2 * GraphLoader.deferredReservationModels)
    }

    @Test("a JSON file that yields its first thousand models gets tables sized from its length")
    func tablesOnceModelsAreRead() throws {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("notes.json")
            let data = try writeNotes(3_000, to: url)
            let result = idSlots(after: data)
            #expect(!result.failed)
            #expect(result.slots >= data.count / 512)
        }
    }
}

@Suite("File errors")
struct FileErrorTests {
    @Test(
        "each errno is told apart by its code, and the error keeps the errno and the system's message",
        arguments: [
            (ENOSPC, PersistenceError.Code.outOfSpace), (EDQUOT, .outOfSpace), (EACCES, .permissionDenied),
            (EPERM, .permissionDenied), (EROFS, .readOnlyFileSystem), (ENOENT, .fileNotFound), (ENOTDIR, .fileNotFound),
            (EIO, .systemFailure),
        ])
    func errnoCodes(errorNumber: Int32, code: PersistenceError.Code) {
        let error = PersistenceError(errorNumber: errorNumber, operation: "write", path: "/a/graph.json")
        #expect(error.code == code)
        #expect(error.errorNumber == errorNumber)
        #expect(error.description.hasPrefix("/a/graph.json: write failed: expected "))
        #expect(error.description.contains("errno \(errorNumber), \(String(cString: strerror(errorNumber)))"))
        #expect(error.description.hasSuffix("[\(code)]"))
        #expect(code ~= error as any Error)
    }

    #if os(Linux)
        @Test("a write where the process may not create files is permissionDenied, naming the target")
        func permissionDenied() throws {
            // sysfs refuses new files to everyone, root included (EACCES).
            let url = URL(fileURLWithPath: "/sys/modelkit-\(UUID().uuidString).json")
            let context = ModelContext()
            let error = #expect(throws: PersistenceError.self) { try context.write(to: url) }
            #expect(error?.code == .permissionDenied)
            #expect(error?.errorNumber == EACCES)
            #expect(error?.path == url.path)
            #expect(error?.operation == "create a temporary file")
        }
    #endif
}

import Foundation
import Testing

@testable import ModelKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Output buffer")
struct OutputBufferTests {
    /// Appends `megabytes` of bytes, handing chunks over between appends as the writers do.
    static func fill(_ buffer: OutputBuffer, megabytes: Int) throws {
        let bytes = [UInt8](repeating: 0x2A, count: 1 << 16)
        for _ in 0..<(megabytes * 16) {
            buffer.append(bytes)
            try buffer.flushIfNeeded()
        }
    }

    @Test("a file's first chunks are written on the calling thread, the rest on another, all in order")
    func mixedChunks() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("mixed").path
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let buffer = OutputBuffer(descriptor: descriptor, chunksHere: 2)
            var expected: [UInt8] = []
            for chunk in 0..<6 {
                let bytes = [UInt8](repeating: UInt8(chunk), count: OutputBuffer.chunkSize + chunk)
                buffer.append(bytes)
                expected += bytes
                try buffer.flushIfNeeded()
            }
            buffer.append([9, 9, 9])
            expected += [9, 9, 9]
            try buffer.finishWriting()
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))
        }
    }

    @Test("chunks written on another thread reach the file whole and in order")
    func chunksInOrder() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("chunks").path
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            // Every chunk goes to the other thread.
            let buffer = OutputBuffer(descriptor: descriptor, chunksHere: 0)
            var expected: [UInt8] = []
            for chunk in 0..<5 {
                // Chunks of different sizes, one larger than the buffer's initial capacity.
                let bytes = (0..<(chunk == 3 ? 3 << 20 : 700_000 + chunk)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ chunk) }
                buffer.append(bytes)
                expected += bytes
                try buffer.flushIfNeeded()
            }
            try buffer.finishWriting()
            #expect(buffer.position == expected.count)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(expected))
        }
    }

    #if os(Linux)
        @Test("a chunk that fails to reach the file is reported, not lost")
        func failedChunk() throws {
            // Every write to /dev/full fails with ENOSPC.
            let descriptor = open("/dev/full", O_WRONLY)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let buffer = OutputBuffer(descriptor: descriptor, chunksHere: 0)
            let error = #expect(throws: CocoaError.self) {
                try Self.fill(buffer, megabytes: 4)
                try buffer.finishWriting()
            }
            #expect(error?.localizedDescription.contains("write failed") == true)
            buffer.abandonWriting()
        }

        @Test("a chunk written on the calling thread that fails is reported at once")
        func failedChunkHere() throws {
            let descriptor = open("/dev/full", O_WRONLY)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let buffer = OutputBuffer(descriptor: descriptor)
            let bytes = [UInt8](repeating: 3, count: OutputBuffer.chunkSize)
            buffer.append(bytes)
            #expect(throws: CocoaError.self) { try buffer.flushIfNeeded() }
        }

        @Test("a last chunk that fails to reach the file is reported by finishing")
        func failedLastChunk() throws {
            let descriptor = open("/dev/full", O_WRONLY)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let buffer = OutputBuffer(descriptor: descriptor)
            // Under one chunk: nothing is handed over before the end.
            buffer.append([UInt8](repeating: 1, count: 1000))
            try buffer.flushIfNeeded()
            #expect(throws: CocoaError.self) { try buffer.finishWriting() }
        }
    #endif
}

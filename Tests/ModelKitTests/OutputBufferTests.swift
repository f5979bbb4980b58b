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

    /// Appends `pieces` to a buffer over a new file, handing chunks over between appends as the
    /// writers do, then finishes; returns the file's bytes and the buffer's final position.
    static func write(_ pieces: [[UInt8]], chunksHere: Int) throws -> (file: Data, position: Int) {
        try withTemporaryDirectory { directory in
            let url = directory.appendingPathComponent("chunks")
            let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let buffer = OutputBuffer(descriptor: descriptor, chunksHere: chunksHere)
            for piece in pieces {
                buffer.append(piece)
                try buffer.flushIfNeeded()
            }
            try buffer.finishWriting()
            return (try Data(contentsOf: url), buffer.position)
        }
    }

    @Test(
        "chunks reach the file whole and in order, written on the calling thread, on another, or both",
        arguments: [0, 2, OutputBuffer.chunksOnCallingThread])
    func chunksInOrder(chunksHere: Int) throws {
        // Pieces under a chunk, of a chunk and a few bytes, one larger than the buffer's initial
        // capacity, and a short tail that only finishing writes.
        var pieces: [[UInt8]] = []
        for number in 0..<8 {
            let count = number == 3 ? 3 << 20 : (number.isMultiple(of: 2) ? 700_000 : OutputBuffer.chunkSize) + number
            pieces.append((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ number) })
        }
        pieces.append([9, 9, 9])
        let expected = pieces.flatMap { $0 }
        let (file, position) = try Self.write(pieces, chunksHere: chunksHere)
        #expect(position == expected.count)
        #expect(file == Data(expected))
    }

    #if os(Linux)
        /// Calls `body` with a buffer over `/dev/full`, where every write fails with ENOSPC.
        static func withFullDevice(chunksHere: Int = OutputBuffer.chunksOnCallingThread, _ body: (OutputBuffer) throws -> Void)
            throws
        {
            let descriptor = open("/dev/full", O_WRONLY)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let buffer = OutputBuffer(descriptor: descriptor, chunksHere: chunksHere)
            // Nothing may still be writing to the descriptor when it is closed.
            defer { buffer.abandonWriting() }
            try body(buffer)
        }

        @Test("a chunk that fails to reach the file on another thread is reported, not lost")
        func failedChunk() throws {
            try Self.withFullDevice(chunksHere: 0) { buffer in
                let error = #expect(throws: PersistenceError.self) {
                    try Self.fill(buffer, megabytes: 4)
                    try buffer.finishWriting()
                }
                #expect(error?.code == .outOfSpace)
                #expect(error?.errorNumber == ENOSPC)
                #expect(error?.operation == "write")
            }
        }

        @Test("a chunk written on the calling thread that fails is reported at once")
        func failedChunkHere() throws {
            try Self.withFullDevice { buffer in
                buffer.append([UInt8](repeating: 3, count: OutputBuffer.chunkSize))
                let error = #expect(throws: PersistenceError.self) { try buffer.flushIfNeeded() }
                #expect(error?.code == .outOfSpace)
            }
        }

        @Test("a last chunk that fails to reach the file is reported by finishing")
        func failedLastChunk() throws {
            try Self.withFullDevice { buffer in
                // Under one chunk: nothing is handed over before the end.
                buffer.append([UInt8](repeating: 1, count: 1000))
                try buffer.flushIfNeeded()
                let error = #expect(throws: PersistenceError.self) { try buffer.finishWriting() }
                #expect(error?.code == .outOfSpace)
            }
        }
    #endif
}

import Foundation
import ModelKitShims

/// SHA-256 (FIPS 180-4), fed in pieces: what a file's bytes are checked against on download and
/// hashed with on upload, without holding the file. Foundation on Linux has no digest, and the
/// library depends on no package, so it is written here.
///
/// ```swift
/// var hash = SHA256()
/// hash.update(Data("abc".utf8))
/// hash.hexDigest()   // "ba7816bf…f20015ad"
/// ```
struct SHA256 {
    /// The eight words of the hash so far.
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// Bytes of the current 64-byte block not processed yet.
    private var pending: [UInt8] = []
    /// Bytes fed so far.
    private var length: UInt64 = 0

    init() { pending.reserveCapacity(64) }

    /// Feeds the bytes of `data`.
    ///
    /// - Complexity: O(*n*) in the bytes.
    mutating func update(_ data: Data) {
        data.withUnsafeBytes { update(UnsafeRawBufferPointer($0)) }
    }

    /// Feeds `bytes`: whole blocks straight from them, the rest kept for the next call.
    ///
    /// - Complexity: O(*n*) in the bytes.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var rest = bytes[...]
        if !pending.isEmpty {
            let take = min(64 - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        let whole = rest.count / 64 * 64
        if whole > 0 {
            compress(UnsafeRawBufferPointer(rebasing: rest.prefix(whole)))
            rest = rest.dropFirst(whole)
        }
        pending.append(contentsOf: rest)
    }

    /// The digest, as 32 bytes; the hash is then spent (start a new one to hash again).
    mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        pending.append(0x80)
        if pending.count > 56 {
            while pending.count < 64 { pending.append(0) }
            pending.withUnsafeBytes { compress($0) }
            pending.removeAll(keepingCapacity: true)
        }
        while pending.count < 56 { pending.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            pending.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        pending.withUnsafeBytes { compress($0) }
        pending.removeAll()
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in state {
            digest += [
                UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
                UInt8(truncatingIfNeeded: word),
            ]
        }
        return digest
    }

    /// The digest as 64 lowercase hexadecimal digits (the form Kinto's attachments give).
    mutating func hexDigest() -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in finalize() {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Processes whole 64-byte blocks (the compression is C: see ModelKitShims.h).
    private mutating func compress(_ blocks: UnsafeRawBufferPointer) {
        guard let base = blocks.baseAddress else { return }
        state.withUnsafeMutableBufferPointer { words in
            modelkit_sha256_blocks(words.baseAddress!, base.assumingMemoryBound(to: UInt8.self), blocks.count / 64)
        }
    }
}

import Foundation

/// Whether the `count` bytes at `a` and `b` are equal: `memcmp(a, b, count) == 0`, inlined.
///
/// The readers compare short runs of bytes (keys, the fixed parts of headers and pointers) a
/// few times per value; a call to `memcmp` for each cost more than the comparison. Words are
/// compared whole, the last one overlapping the one before it when `count` is not a multiple.
@inline(__always)
func bytesEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
    if count >= 8 {
        var difference: UInt64 = 0
        var offset = 0
        while offset + 8 <= count {
            difference |=
                a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset += 8
        }
        if offset < count {
            let last = count - 8
            difference |=
                a.loadUnaligned(fromByteOffset: last, as: UInt64.self)
                ^ b.loadUnaligned(fromByteOffset: last, as: UInt64.self)
        }
        return difference == 0
    }
    if count >= 4 {
        let last = count - 4
        return (a.loadUnaligned(as: UInt32.self) ^ b.loadUnaligned(as: UInt32.self))
            | (a.loadUnaligned(fromByteOffset: last, as: UInt32.self) ^ b.loadUnaligned(fromByteOffset: last, as: UInt32.self))
            == 0
    }
    var difference: UInt8 = 0
    for offset in 0..<count {
        difference |= a.load(fromByteOffset: offset, as: UInt8.self) ^ b.load(fromByteOffset: offset, as: UInt8.self)
    }
    return difference == 0
}

/// Whether `bytes[start..<end]` is exactly the UTF-8 of `text`: how the tree documents compare a
/// string in the file with a key or tag without making a `String`.
@inline(__always)
func bytes(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, equal text: StaticString) -> Bool {
    let count = text.utf8CodeUnitCount
    return end - start == count && (count == 0 || memcmp(bytes.baseAddress! + start, text.utf8Start, count) == 0)
}

/// Whether `bytes[start..<end]` is exactly the UTF-8 of `text` (see the `StaticString` form).
@inline(__always)
func bytes(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, equal text: String) -> Bool {
    var text = text
    return text.withUTF8 { wanted in
        end - start == wanted.count
            && (wanted.isEmpty || memcmp(bytes.baseAddress! + start, wanted.baseAddress!, wanted.count) == 0)
    }
}

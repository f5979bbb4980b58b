import Foundation
import Synchronization

/// The most a binary property list may make when it is decoded, in proportion to its size.
///
/// Why: a property list refers to its objects by number, so one object can be used any number of
/// times. A 1 MB file that refers 2,000 times to one 1 MiB string would decode to 2 GB, and a
/// 12 KB array of 3,000 uses of one array of 3,000 strings to 9 million strings. Two rules bound
/// that:
///
/// - Long strings and data (``DecodedSizeMeter/sharedSize`` bytes and more) are decoded once
///   per object and shared by every use: their bytes count once.
/// - Everything decoded counts against a limit of ``factor`` times the file's size (at least
///   ``minimum``): string and data bytes, and ``elementSize`` bytes for each element of a
///   container, which is what an element takes in memory. Past it, decoding stops with
///   ``SerializationError/Code/limitExceeded``.
///
/// ModelKit's own files decode to a few times their size. JSON needs no such limit: every value
/// it decodes is spelled out in its own bytes.
final class DecodedSizeLimit: Sendable {
    /// How many times its size a file may decode to.
    static let factor = 32
    /// The decoded size every file may reach, however small.
    static let minimum = 4 << 20
    /// What a container element counts for: a reference or a small value in memory.
    static let elementSize = 16

    let limit: Int
    let inputSize: Int
    private let used = Atomic<Int>(0)

    init(inputSize: Int) {
        self.inputSize = inputSize
        let (scaled, overflow) = inputSize.multipliedReportingOverflow(by: Self.factor)
        limit = overflow ? .max : max(Self.minimum, scaled)
    }

    /// Adds `amount` to what all threads decoded; `false` once the total passes the limit.
    func add(_ amount: Int) -> Bool {
        used.add(amount, ordering: .relaxed).newValue <= limit
    }
}

/// One thread's share of a ``DecodedSizeLimit``: it adds to the shared total a megabyte at a
/// time, so decoding does not pay for an atomic operation per value (the total may run past
/// the limit by at most a megabyte per thread before it is seen).
final class DecodedSizeMeter {
    let limit: DecodedSizeLimit
    // Unchecked: one meter is used by one thread, for every string a load decodes.
    @exclusivity(unchecked) private var pending = 0

    init(limit: DecodedSizeLimit) {
        self.limit = limit
    }

    /// The size from which strings and data are decoded once per object and shared.
    static let sharedSize = 64
    /// Long strings and data decoded last, by object number (see ``sharedSize``).
    @exclusivity(unchecked) var strings = SharedValues<String>()
    @exclusivity(unchecked) var data = SharedValues<Data>()

    /// Counts `amount` bytes decoded for the object at `byteOffset`.
    ///
    /// - Throws: ``SerializationError/Code/limitExceeded`` once the total passes the limit.
    @inline(__always) func charge(_ amount: Int, at byteOffset: Int) throws {
        pending &+= amount
        if pending >= 1 << 20 { try flush(at: byteOffset) }
    }

    /// Counts a string's or data's `count` bytes: nothing for a string short enough to be
    /// stored inline (15 bytes of UTF-8), which its element or property already counts.
    @inline(__always) func charge(storage count: Int, at byteOffset: Int) throws {
        if count > 15 { try charge(count, at: byteOffset) }
    }

    private func flush(at byteOffset: Int) throws {
        defer { pending = 0 }
        guard limit.add(pending) else {
            throw SerializationError(
                .limitExceeded, byteOffset: byteOffset,
                expected:
                    "at most \(limit.limit) bytes of decoded values for a file of \(limit.inputSize) bytes (\(DecodedSizeLimit.factor) times its size, at least \(DecodedSizeLimit.minimum))",
                found: "more: objects used over and over")
        }
    }
}

/// The last long values decoded, in 64 slots chosen by object number: a file that uses one
/// object over and over finds it here. A lookup is one comparison, not a hash (with a
/// dictionary of every long string, its lookups took about 2% of the profile samples of loading
/// a 100k-post file whose strings are all used once); a file
/// that alternates between more objects than there are slots decodes them again, and its
/// limit (``DecodedSizeLimit``) counts each decoding.
struct SharedValues<Value> {
    private var slots = [(node: Int, value: Value?)](repeating: (-1, nil), count: 64)

    subscript(node: Int) -> Value? {
        get {
            let slot = slots[node & 63]
            return slot.node == node ? slot.value : nil
        }
        set { slots[node & 63] = (node, newValue) }
    }
}

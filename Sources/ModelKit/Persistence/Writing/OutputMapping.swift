import Foundation
import ModelKitShims

/// Memory of its own for a large in-memory output (``OutputBuffer`` without a file), on Linux.
///
/// Why: a buffer grown with `realloc` is copied whenever its block cannot grow in place, and below
/// glibc's mmap threshold (which rises to 32 MB once large blocks are freed) the blocks it leaves
/// behind stay resident in the heap: growing a 60 MB output that way peaked at about 2.1–2.3x its
/// size. A mapping grows with `mremap`, which moves the pages instead of copying them, touches
/// only the pages written (huge pages where the system offers them: one fault per 2 MB), and is
/// handed back to the system by `munmap` as soon as the output's `Data` goes. Elsewhere
/// (``isAvailable`` is `false`) buffers keep growing with `realloc`.
enum OutputMapping {
    /// Whether buffers move into mappings: Linux only (its `mremap`).
    #if os(Linux)
        static let isAvailable = true
    #else
        static let isAvailable = false
    #endif

    /// The capacity from which an in-memory buffer lives in a mapping. Below it, `malloc` is
    /// cheaper (a mapping costs system calls and page faults) and what a copy costs is small; the
    /// one copy into the mapping costs at most this much.
    static let threshold = 1 << 20

    /// The system's page size: mappings are whole pages.
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// `bytes` rounded up to whole pages.
    static func pages(_ bytes: Int) -> Int {
        (bytes + pageSize - 1) / pageSize * pageSize
    }

    /// A new mapping of `bytes` (whole pages). Like Swift's own allocation, it traps when the
    /// system has no memory left.
    static func map(_ bytes: Int) -> UnsafeMutablePointer<UInt8> {
        guard let address = modelkit_map_memory(bytes) else { fatalError("OutputMapping: out of memory mapping \(bytes) bytes") }
        return address.assumingMemoryBound(to: UInt8.self)
    }

    /// The mapping at `base` of `bytes`, resized to `newBytes` (both whole pages): moved if it
    /// must, its contents kept, never copied. Traps when the system has no memory left.
    static func remap(_ base: UnsafeMutablePointer<UInt8>, from bytes: Int, to newBytes: Int) -> UnsafeMutablePointer<UInt8> {
        guard let address = modelkit_remap_memory(base, bytes, newBytes) else {
            fatalError("OutputMapping: out of memory growing a mapping to \(newBytes) bytes")
        }
        return address.assumingMemoryBound(to: UInt8.self)
    }

    /// Unmaps the mapping at `base` of `bytes`.
    static func unmap(_ base: UnsafeMutableRawPointer, _ bytes: Int) {
        // It fails only for an address or size that is not a mapping of ours: a bug, not a state.
        let result = modelkit_unmap_memory(base, bytes)
        assert(result == 0, "OutputMapping: munmap failed")
    }

    /// The `count` bytes at `base` (in a mapping of `bytes`) as `Data` that owns the mapping: the
    /// mapping shrinks to the whole pages the bytes need, and is unmapped when the `Data` goes.
    static func data(_ base: UnsafeMutablePointer<UInt8>, count: Int, mapped bytes: Int) -> Data {
        // At least one page: a mapping cannot be empty.
        let needed = Swift.max(pages(count), pageSize)
        let base = needed < bytes ? remap(base, from: bytes, to: needed) : base
        let size = Swift.min(needed, bytes)
        return Data(bytesNoCopy: base, count: count, deallocator: .custom { address, _ in unmap(address, size) })
    }
}

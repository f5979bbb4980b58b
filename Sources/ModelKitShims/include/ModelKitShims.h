// The change epoch of ModelKit (see ChangeEpoch in Changes/ChangeTracker.swift).
//
// Why C: a property write reads the epoch on its fast path. Read with Swift's Atomic, the load is
// an opaque operation to the optimizer, which then keeps the model retained around every write
// (most of the write's cost); read through a Swift function declared read-only, it costs a call.
// A static inline C function declared pure is both inlined and known to only read memory.

#ifndef MODELKIT_SHIMS_H
#define MODELKIT_SHIMS_H

#include <stddef.h>
#include <stdint.h>

/// The epoch itself. Only the functions below touch it.
extern uint32_t _modelkit_change_epoch;

/// The current change epoch (never 0), read with relaxed ordering.
static inline __attribute__((pure)) uint32_t modelkit_change_epoch(void) {
    return __atomic_load_n(&_modelkit_change_epoch, __ATOMIC_RELAXED);
}

/// Starts a new change epoch, skipping those whose low 31 bits are 0: a model's quiet epoch
/// is the epoch with the top bit flipped for some types, and must never be 0 ("not quiet").
static inline void modelkit_advance_change_epoch(void) {
    uint32_t next = __atomic_add_fetch(&_modelkit_change_epoch, 1, __ATOMIC_RELAXED);
    if ((next & 0x7FFFFFFFu) == 0) {
        __atomic_store_n(&_modelkit_change_epoch, next + 1, __ATOMIC_RELAXED);
    }
}

/// Starts writing `count` bytes of the file at `offset` to disk without waiting for them (Linux's
/// `sync_file_range` with `SYNC_FILE_RANGE_WRITE`; elsewhere it does nothing). Returns -1 with
/// `errno` set on failure. Why: an atomic write ends with `fsync`, which otherwise starts writing
/// the whole file only then; started chunk by chunk, the disk works while the encoder does.
int modelkit_start_writeback(int descriptor, int64_t offset, int64_t count);

/// `bytes` (a multiple of the page size) of new zeroed memory mapped for reading and writing, or
/// NULL on failure; Linux only (elsewhere always NULL). Why: an in-memory output that lives in a
/// mapping of its own grows with `modelkit_remap_memory`, which moves its pages instead of copying
/// them, and is handed back to the system at once when it is freed. The mapping asks for huge
/// pages (`MADV_HUGEPAGE`, where the system offers them on request): writing 60 MB then takes
/// about 30 page faults instead of about 15,000, for at most one partly written 2 MB page more.
void *modelkit_map_memory(size_t bytes);

/// Resizes a mapping from `modelkit_map_memory` of `bytes` to `newBytes` (multiples of the page
/// size), moving it if it must (Linux's `mremap` with `MREMAP_MAYMOVE`: the pages move, their
/// contents are not copied). Returns the mapping's address, or NULL on failure (the old mapping
/// is then intact). Linux only (elsewhere always NULL). Why C: Swift's Glibc module does not
/// declare `mremap`, a GNU extension.
void *modelkit_remap_memory(void *address, size_t bytes, size_t newBytes);

/// Unmaps a mapping from `modelkit_map_memory` (`munmap`); returns -1 with `errno` on failure.
int modelkit_unmap_memory(void *address, size_t bytes);

/// Asks the processor to bring the cache line at `address` in, for writing, without waiting for
/// it. Why: inserting a million ids into a hash table far larger than the cache waits for one
/// memory read per id; asked for a few ids ahead, those reads overlap.
static inline void modelkit_prefetch_for_writing(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

/// Asks the processor to bring the cache line at `address` in, for reading (by any number of
/// threads), without waiting for it. Why: a query scan reads each model's object and then its
/// properties, and a load resolves ids wherever the allocator put their targets; asked for a few
/// ahead, those reads overlap instead of each waiting for memory.
static inline void modelkit_prefetch_for_reading(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

/// Runs SHA-256's compression over `blocks` 64-byte blocks at `data`, updating the eight words of
/// `state` (FIPS 180-4). Why C: ModelKitServices hashes every file it uploads and downloads, and
/// the tests run a debug build, where the same loop in Swift (bounds checks, calls not inlined)
/// hashes a few megabytes a second; the padding and buffering stay in Swift (Files/SHA256.swift).
///
/// On x86-64 processors with the SHA extensions it uses them (about seven times as fast); the
/// portable loop, ``modelkit_sha256_blocks_portable``, runs elsewhere.
void modelkit_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);

/// ``modelkit_sha256_blocks`` without the processor's SHA extensions (the tests compare the two).
void modelkit_sha256_blocks_portable(uint32_t state[8], const uint8_t *data, size_t blocks);

#endif

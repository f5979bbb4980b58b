// sync_file_range is a GNU extension: declared only with _GNU_SOURCE, before any include.
#if defined(__linux__)
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#endif

#include "ModelKitShims.h"

uint32_t _modelkit_change_epoch = 1;

int modelkit_start_writeback(int descriptor, int64_t offset, int64_t count) {
#if defined(__linux__)
    return sync_file_range(descriptor, offset, count, SYNC_FILE_RANGE_WRITE);
#else
    (void)descriptor;
    (void)offset;
    (void)count;
    return 0;
#endif
}

void *modelkit_map_memory(size_t bytes) {
#if defined(__linux__)
    void *address = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) return NULL;
#if defined(MADV_HUGEPAGE)
    // An output is written front to back, page after page: with huge pages (where the system
    // offers them on request) it takes one fault per 2 MB instead of one per 4 KB. The flag
    // stays with the mapping when mremap grows or moves it. A refusal changes nothing.
    (void)madvise(address, bytes, MADV_HUGEPAGE);
#endif
    return address;
#else
    (void)bytes;
    return NULL;
#endif
}

void *modelkit_remap_memory(void *address, size_t bytes, size_t newBytes) {
#if defined(__linux__)
    void *moved = mremap(address, bytes, newBytes, MREMAP_MAYMOVE);
    return moved == MAP_FAILED ? NULL : moved;
#else
    (void)address;
    (void)bytes;
    (void)newBytes;
    return NULL;
#endif
}

int modelkit_unmap_memory(void *address, size_t bytes) {
#if defined(__linux__)
    return munmap(address, bytes);
#else
    (void)address;
    (void)bytes;
    return -1;
#endif
}

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define SHA256_ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

void modelkit_sha256_blocks_portable(uint32_t state[8], const uint8_t *data, size_t blocks) {
    uint32_t w[64];
    for (; blocks > 0; blocks--, data += 64) {
        for (int i = 0; i < 16; i++) {
            w[i] = (uint32_t)data[4 * i] << 24 | (uint32_t)data[4 * i + 1] << 16 | (uint32_t)data[4 * i + 2] << 8
                | (uint32_t)data[4 * i + 3];
        }
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = SHA256_ROTR(w[i - 15], 7) ^ SHA256_ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = SHA256_ROTR(w[i - 2], 17) ^ SHA256_ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (SHA256_ROTR(e, 6) ^ SHA256_ROTR(e, 11) ^ SHA256_ROTR(e, 25)) + ((e & f) ^ (~e & g))
                + sha256_k[i] + w[i];
            uint32_t t2 = (SHA256_ROTR(a, 2) ^ SHA256_ROTR(a, 13) ^ SHA256_ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
    }
}

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>

// The processor's SHA extensions (Intel since Goldmont and Ice Lake, AMD since Zen): two rounds
// per instruction, about seven times the portable loop. The state is kept as the instructions
// want it, in two vectors holding the words A, B, E, F and C, D, G, H (highest lane first).
__attribute__((target("sha,sse4.1,ssse3")))
static void sha256_blocks_extensions(uint32_t state[8], const uint8_t *data, size_t blocks) {
    // Reverses the bytes of each 32-bit word: the message is big-endian.
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    for (; blocks > 0; blocks--, data += 64) {
        const __m128i abefBefore = abef, cdghBefore = cdgh;
        // The message schedule, four words at a time: w[i % 4] holds words 4i to 4i + 3.
        __m128i w[4];
        for (int i = 0; i < 16; i++) {
            __m128i words;
            if (i < 4) {
                words = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), byteSwap);
            } else {
                // W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16], for t = 4i to 4i + 3.
                __m128i partial = _mm_sha256msg1_epu32(w[i & 3], w[(i - 3) & 3]);
                partial = _mm_add_epi32(partial, _mm_alignr_epi8(w[(i - 1) & 3], w[(i - 2) & 3], 4));
                words = _mm_sha256msg2_epu32(partial, w[(i - 1) & 3]);
            }
            w[i & 3] = words;
            __m128i scheduled = _mm_add_epi32(words, _mm_loadu_si128((const __m128i *)&sha256_k[4 * i]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, scheduled);
            scheduled = _mm_shuffle_epi32(scheduled, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, scheduled);
        }
        abef = _mm_add_epi32(abef, abefBefore);
        cdgh = _mm_add_epi32(cdgh, cdghBefore);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}

/// Whether the processor has the SHA extensions and the SSE levels the path above uses.
static int sha256_has_extensions(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    int sse = (ecx & bit_SSSE3) && (ecx & bit_SSE4_1);
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    return sse && (ebx & bit_SHA);
}
#endif

void modelkit_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    // Asked once; two first callers at once both ask, and store the same answer.
    static int cached = -1;
    int extensions = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (extensions < 0) {
        extensions = sha256_has_extensions();
        __atomic_store_n(&cached, extensions, __ATOMIC_RELAXED);
    }
    if (extensions) {
        sha256_blocks_extensions(state, data, blocks);
        return;
    }
#endif
    modelkit_sha256_blocks_portable(state, data, blocks);
}

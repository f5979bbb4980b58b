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
    return address == MAP_FAILED ? NULL : address;
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

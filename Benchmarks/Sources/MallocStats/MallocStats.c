#include "MallocStats.h"

#if defined(__GLIBC__)
#include <malloc.h>

int64_t mallocstats_allocated_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return (int64_t)(info.uordblks + info.hblkhd);
}

void mallocstats_trim(void) { malloc_trim(0); }

#elif defined(__APPLE__)
#include <malloc/malloc.h>

int64_t mallocstats_allocated_bytes(void) {
    malloc_statistics_t stats;
    malloc_zone_statistics(NULL, &stats);
    return (int64_t)stats.size_in_use;
}

void mallocstats_trim(void) {}

#else

int64_t mallocstats_allocated_bytes(void) { return -1; }

void mallocstats_trim(void) {}

#endif

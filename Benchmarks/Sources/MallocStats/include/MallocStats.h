#ifndef MALLOC_STATS_H
#define MALLOC_STATS_H

#include <stdint.h>

/// The bytes the C heap currently hands out to the program (allocated chunks, including their
/// headers and any chunk malloc mapped on its own), summed over every arena; -1 where the
/// platform does not say.
///
/// glibc: `mallinfo2()`: `uordblks + hblkhd`. Darwin: the default zone's `size_in_use`.
/// Swift's Glibc module does not import <malloc.h>, hence this C file.
int64_t mallocstats_allocated_bytes(void);

/// Returns free memory at the top of the heap and in free chunks to the system (glibc's
/// `malloc_trim(0)`); does nothing elsewhere.
void mallocstats_trim(void);

#endif

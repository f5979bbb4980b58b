// sync_file_range is a GNU extension: declared only with _GNU_SOURCE, before any include.
#if defined(__linux__)
#define _GNU_SOURCE
#include <fcntl.h>
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

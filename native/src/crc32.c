/* CRC-32 with the zlib/PNG polynomial (reflected 0xEDB88320), table-driven. */
#include <pthread.h>

#include "internal.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
    uint32_t i, k, c;
    for (i = 0; i < 256; i++) {
        c = i;
        for (k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}

uint32_t pk_crc32(uint32_t crc, const void *data, size_t size) {
    const uint8_t *p = (const uint8_t *)data;
    pthread_once(&table_once, build_table);
    crc = ~crc;
    while (size--) crc = table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

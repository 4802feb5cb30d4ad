/* libFuzzer target for the .kbin reader and everything that consumes a parsed artifact
 * without running device code: the container and payload parser, the inspect text / JSON /
 * --source printers, re-encoding (pk_artifact_write), and the ELF loader on every "llvm" payload (mapped, relocated, never
 * executed). Each input is tried as is and with its trailing CRC-32 recomputed, so mutations
 * get past the checksum into the structures behind it. Build: make -C native fuzz. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "polykern.h"
#include "internal.h"

static FILE *sink;

static void consume(const uint8_t *data, size_t size) {
    pk_error err;
    pk_artifact *art = pk_artifact_parse(data, size, &err);
    size_t i;
    if (!art) {
        if (err.status != PK_ERR_ARTIFACT || !err.has_offset || err.offset > size) abort();
        return;
    }
    pk_artifact_describe(art, "fuzz.kbin", sink);
    pk_artifact_write_json(art, "fuzz.kbin", sink);
    pk_artifact_print_source(art, "fuzz.kbin", "ptx", sink, sink);
    {   /* encoded again: it parses, and a version-2 artifact gives back its own bytes */
        uint8_t *again;
        size_t n;
        pk_artifact *back;
        if (pk_artifact_write(art, &again, &n, &err) == 0) {
            if (art->version == PK_KBIN_VERSION && (n != size || memcmp(again, data, n) != 0)) abort();
            back = pk_artifact_parse(again, n, &err);
            if (!back) abort();
            pk_artifact_free(back);
            free(again);
        }
    }
    for (i = 0; i < art->num_modules; i++) {
        const pk_module *m = &art->modules[i];
        if (m->layout == PK_LAYOUT_BYTES && strcmp(m->kind.ptr, "llvm") == 0) {
            pk_elf_image *img = pk_elf_load(m->payload, m->payload_size, &err);
            pk_elf_free(img);
        }
    }
    pk_artifact_free(art);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy;
    if (!sink) sink = fopen("/dev/null", "w");
    consume(data, size);
    if (size >= 4) {
        uint32_t c = pk_crc32(0, data, size - 4);
        copy = (uint8_t *)malloc(size);
        if (!copy) return 0;
        memcpy(copy, data, size);
        copy[size - 4] = (uint8_t)c;
        copy[size - 3] = (uint8_t)(c >> 8);
        copy[size - 2] = (uint8_t)(c >> 16);
        copy[size - 1] = (uint8_t)(c >> 24);
        consume(copy, size);
        free(copy);
    }
    return 0;
}

/* libFuzzer target for the ELF relocatable-object loader alone (mapped and relocated, never
 * executed). Seeds: the test objects of tests/objects built by make check. */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pk_error err;
    pk_elf_image *img = pk_elf_load(data, size, &err);
    if (!img && err.status != PK_ERR_LOAD && err.status != PK_ERR_NOMEM) abort();
    pk_elf_free(img);
    return 0;
}

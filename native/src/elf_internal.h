/* Shared state of the ELF relocatable-object loader and its per-machine relocators. */
#ifndef PK_ELF_INTERNAL_H
#define PK_ELF_INTERNAL_H

#include <elf.h>

#include "internal.h"

#define PK_STUB_SIZE 16u   /* one far-call trampoline */
#define PK_MAX_IMAGE ((size_t)1 << 30)
#define PK_NO_SLOT ((size_t)-1)

enum {
    PK_RF_GOT = 1,      /* needs a GOT slot for its symbol */
    PK_RF_BRANCH = 2,   /* a call/jump: goes through a trampoline to an external symbol */
    PK_RF_ABS32 = 4,    /* absolute 32-bit: refused (build position-independent) */
    PK_RF_UNKNOWN = 8,
    PK_RF_CALL = 16,    /* its symbol must be a function (or external) */
    PK_RF_NEAR = 32     /* a narrow field holding S: its symbol must be inside the image */
};

typedef struct pk_elf_ctx {
    const uint8_t *obj;
    size_t size;
    uint16_t machine;
    Elf64_Shdr *sh;
    size_t shnum;
    uint64_t shoff;        /* file offset of the section headers (for messages) */
    size_t shstrndx;
    const char *shstr;     /* section name table, checked by pk_elf_check */
    size_t shstr_size;
    size_t symtab;         /* index of the symbol table section */
    size_t *sec_off;       /* offset of each loaded section in the image, PK_NO_SLOT if not */
    Elf64_Sym *syms;
    size_t nsyms;
    const char *strtab;
    size_t strtab_size;
    uint64_t *sym_addr;    /* resolved address of each symbol */
    uint8_t *sym_undef;    /* 1 when resolved from the process (external) */
    size_t *got_slot;      /* image offset of the symbol's GOT slot, or PK_NO_SLOT */
    size_t *stub_slot;     /* image offset of its trampoline, or PK_NO_SLOT */
    uint8_t *sym_used;     /* referenced by a relocation of a loaded section */
    uint64_t got_addr;     /* address of the GOT (= _GLOBAL_OFFSET_TABLE_) */
    uint8_t *base;         /* the mapping */
    size_t total;
    pk_error *err;
} pk_elf_ctx;

/* A relocation site: where it is and how much of its section follows it. */
typedef struct pk_reloc_site {
    uint8_t *p;
    uint64_t addr;
    size_t room;
    const char *section;
} pk_reloc_site;

/* elf_check.c: the structure rules; 0 or PK_ERR_LOAD/NOMEM. Needs obj, size, machine, sh,
 * shnum, shoff, shstrndx; sets shstr, symtab, strtab and nsyms. */
int pk_elf_check(pk_elf_ctx *c);

/* Per machine: bytes a relocation type patches (-1 when unsupported) and its PK_RF_ flags. */
int pk_reloc_width_x86_64(uint32_t type);
int pk_reloc_width_aarch64(uint32_t type);
int pk_reloc_flags_x86_64(uint32_t type);
int pk_reloc_apply_x86_64(pk_elf_ctx *c, const pk_reloc_site *s, uint32_t type, size_t sym,
                          int64_t addend);
void pk_stub_write_x86_64(uint8_t *at, uint64_t target);

int pk_reloc_flags_aarch64(uint32_t type);
int pk_reloc_apply_aarch64(pk_elf_ctx *c, const pk_reloc_site *s, uint32_t type, size_t sym,
                           int64_t addend);
void pk_stub_write_aarch64(uint8_t *at, uint64_t target);
const char *pk_reloc_insn_problem_aarch64(uint32_t type, uint32_t insn);

/* Helpers for the relocators */
int pk_reloc_fail(pk_elf_ctx *c, const pk_reloc_site *s, uint32_t type, size_t sym,
                  const char *why);
const char *pk_elf_sym_name(const pk_elf_ctx *c, size_t sym);
void pk_put32(uint8_t *p, uint32_t v);
void pk_put64(uint8_t *p, uint64_t v);
uint32_t pk_get32(const uint8_t *p);

#endif

/* x86-64 RELA relocations for the CPU object loader (System V psABI names:
 * S symbol, A addend, P place, G GOT slot, L trampoline). */
#include <string.h>

#include "elf_internal.h"

#ifndef R_X86_64_GOTPCRELX
#define R_X86_64_GOTPCRELX 41
#endif
#ifndef R_X86_64_REX_GOTPCRELX
#define R_X86_64_REX_GOTPCRELX 42
#endif

int pk_reloc_flags_x86_64(uint32_t type) {
    switch (type) {
    case R_X86_64_NONE:
    case R_X86_64_64:
    case R_X86_64_PC64:
    case R_X86_64_GOTPC32:
    case R_X86_64_GOTPC64:
    case R_X86_64_GOTOFF64:
        return 0;
    case R_X86_64_PC32:      /* data or code inside the image: never a trampoline */
        return PK_RF_NEAR;
    case R_X86_64_PLT32:
        return PK_RF_BRANCH | PK_RF_CALL;
    case R_X86_64_32:
    case R_X86_64_32S:
        return PK_RF_ABS32;
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
        return PK_RF_GOT;
    default:
        return PK_RF_UNKNOWN;
    }
}

int pk_reloc_width_x86_64(uint32_t type) {
    int f = pk_reloc_flags_x86_64(type);
    if (f & (PK_RF_UNKNOWN | PK_RF_ABS32)) return -1;
    if (type == R_X86_64_NONE) return 0;
    return (type == R_X86_64_64 || type == R_X86_64_PC64 || type == R_X86_64_GOTPC64 ||
            type == R_X86_64_GOTOFF64) ? 8 : 4;
}

/* 14-byte far jump: jmp *0(%rip); .quad target */
void pk_stub_write_x86_64(uint8_t *at, uint64_t target) {
    static const uint8_t jmp[6] = {0xFF, 0x25, 0, 0, 0, 0};
    memcpy(at, jmp, 6);
    pk_put64(at + 6, target);
    memset(at + 14, 0xCC, PK_STUB_SIZE - 14);
}

static int fits_s32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

int pk_reloc_apply_x86_64(pk_elf_ctx *c, const pk_reloc_site *s, uint32_t type, size_t sym,
                          int64_t addend) {
    uint64_t S = c->sym_addr[sym], P = s->addr;
    int64_t v;
    int width = pk_reloc_width_x86_64(type);
    if (width <= 0) return pk_reloc_fail(c, s, type, sym, "unsupported relocation type");
    if (s->room < (size_t)width) return pk_reloc_fail(c, s, type, sym, "patch runs past its section");
    switch (type) {
    case R_X86_64_64:
        pk_put64(s->p, S + (uint64_t)addend);
        return 0;
    case R_X86_64_PC64:
        pk_put64(s->p, S + (uint64_t)addend - P);
        return 0;
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
        v = (int64_t)(S + (uint64_t)addend - P);
        if (!fits_s32(v) || (type == R_X86_64_PLT32 && c->sym_undef[sym])) {
            if (type != R_X86_64_PLT32 || c->stub_slot[sym] == PK_NO_SLOT)
                return pk_reloc_fail(c, s, type, sym, "target is further than +-2 GiB");
            v = (int64_t)((uint64_t)(uintptr_t)(c->base + c->stub_slot[sym]) + (uint64_t)addend - P);
            if (!fits_s32(v)) return pk_reloc_fail(c, s, type, sym, "trampoline out of range");
        }
        pk_put32(s->p, (uint32_t)(int32_t)v);
        return 0;
    case R_X86_64_GOTPC64:
        pk_put64(s->p, c->got_addr + (uint64_t)addend - P);
        return 0;
    case R_X86_64_GOTOFF64:
        pk_put64(s->p, S + (uint64_t)addend - c->got_addr);
        return 0;
    case R_X86_64_GOTPC32:
        v = (int64_t)(c->got_addr + (uint64_t)addend - P);
        if (!fits_s32(v)) return pk_reloc_fail(c, s, type, sym, "GOT out of range");
        pk_put32(s->p, (uint32_t)(int32_t)v);
        return 0;
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
        v = (int64_t)((uint64_t)(uintptr_t)(c->base + c->got_slot[sym]) + (uint64_t)addend - P);
        if (!fits_s32(v)) return pk_reloc_fail(c, s, type, sym, "GOT slot out of range");
        pk_put32(s->p, (uint32_t)(int32_t)v);
        return 0;
    default:
        return pk_reloc_fail(c, s, type, sym, "unsupported relocation type");
    }
}

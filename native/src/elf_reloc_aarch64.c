/* AArch64 RELA relocations for the CPU object loader (ELF for the Arm 64-bit
 * Architecture: S symbol, A addend, P place, G GOT slot, Page(x) = x & ~0xFFF). */
#include <string.h>

#include "elf_internal.h"

enum {
    ABS64 = 257, ABS32 = 258, PREL64 = 260, PREL32 = 261,
    MOVW_UABS_G0 = 263, MOVW_UABS_G0_NC = 264, MOVW_UABS_G1 = 265, MOVW_UABS_G1_NC = 266,
    MOVW_UABS_G2 = 267, MOVW_UABS_G2_NC = 268, MOVW_UABS_G3 = 269,
    ADR_PREL_LO21 = 274, ADR_PREL_PG_HI21 = 275, ADR_PREL_PG_HI21_NC = 276,
    ADD_ABS_LO12_NC = 277, LDST8_ABS_LO12_NC = 278, TSTBR14 = 279, CONDBR19 = 280,
    JUMP26 = 282, CALL26 = 283, LDST16_ABS_LO12_NC = 284, LDST32_ABS_LO12_NC = 285,
    LDST64_ABS_LO12_NC = 286, LDST128_ABS_LO12_NC = 299,
    ADR_GOT_PAGE = 311, LD64_GOT_LO12_NC = 312
};

int pk_reloc_flags_aarch64(uint32_t type) {
    switch (type) {
    case 0: case ABS64: case PREL64: case MOVW_UABS_G0_NC: case MOVW_UABS_G1_NC:
    case MOVW_UABS_G2: case MOVW_UABS_G2_NC: case MOVW_UABS_G3: case ADR_PREL_PG_HI21_NC:
    case ADD_ABS_LO12_NC: case LDST8_ABS_LO12_NC: case LDST16_ABS_LO12_NC:
    case LDST32_ABS_LO12_NC: case LDST64_ABS_LO12_NC: case LDST128_ABS_LO12_NC:
        return 0;
    case PREL32: case MOVW_UABS_G0: case MOVW_UABS_G1: case ADR_PREL_LO21: case ADR_PREL_PG_HI21:
    case TSTBR14: case CONDBR19:   /* narrow fields that hold S: inside the image only */
        return PK_RF_NEAR;
    case ABS32:
        return PK_RF_ABS32;
    case JUMP26: case CALL26:
        return PK_RF_BRANCH | PK_RF_CALL;
    case ADR_GOT_PAGE: case LD64_GOT_LO12_NC:
        return PK_RF_GOT;
    default:
        return PK_RF_UNKNOWN;
    }
}

int pk_reloc_width_aarch64(uint32_t type) {
    int f = pk_reloc_flags_aarch64(type);
    if (f & (PK_RF_UNKNOWN | PK_RF_ABS32)) return -1;
    if (type == 0) return 0;
    return (type == ABS64 || type == PREL64) ? 8 : 4;
}

/* The instruction a relocation patches must be of the kind the type is for (a damaged type
 * would otherwise patch another field, e.g. scale a load's offset wrongly): NULL or why not. */
const char *pk_reloc_insn_problem_aarch64(uint32_t type, uint32_t insn) {
    int want = -1;
    switch (type) {
    case MOVW_UABS_G0: case MOVW_UABS_G0_NC: want = 0; break;
    case MOVW_UABS_G1: case MOVW_UABS_G1_NC: want = 1; break;
    case MOVW_UABS_G2: case MOVW_UABS_G2_NC: want = 2; break;
    case MOVW_UABS_G3: want = 3; break;
    case LDST8_ABS_LO12_NC: want = 0; break;
    case LDST16_ABS_LO12_NC: want = 1; break;
    case LDST32_ABS_LO12_NC: want = 2; break;
    case LDST64_ABS_LO12_NC: want = 3; break;
    case LDST128_ABS_LO12_NC: want = 4; break;
    default: break;
    }
    switch (type) {
    case MOVW_UABS_G0: case MOVW_UABS_G0_NC: case MOVW_UABS_G1: case MOVW_UABS_G1_NC:
    case MOVW_UABS_G2: case MOVW_UABS_G2_NC: case MOVW_UABS_G3:
        if ((insn & 0x1F800000u) != 0x12800000u) return "is not a MOVZ/MOVN/MOVK instruction";
        return (int)((insn >> 21) & 3u) == want ? NULL : "MOVW group and the instruction's shift differ";
    case LDST8_ABS_LO12_NC: case LDST16_ABS_LO12_NC: case LDST32_ABS_LO12_NC:
    case LDST64_ABS_LO12_NC: case LDST128_ABS_LO12_NC: {
        int scale = (int)(insn >> 30);
        if ((insn & 0x3B000000u) != 0x39000000u)
            return "is not a load/store with an unsigned offset";
        if ((insn & 0x04800000u) == 0x04800000u) scale = 4;   /* SIMD&FP, opc 1x: 128-bit */
        return scale == want ? NULL : "load/store size and relocation scale differ";
    }
    case ADD_ABS_LO12_NC:
        return (insn & 0x7F800000u) == 0x11000000u ? NULL : "is not an ADD (immediate)";
    case ADR_PREL_PG_HI21: case ADR_PREL_PG_HI21_NC: case ADR_GOT_PAGE:
        return (insn & 0x9F000000u) == 0x90000000u ? NULL : "is not an ADRP";
    case ADR_PREL_LO21:
        return (insn & 0x9F000000u) == 0x10000000u ? NULL : "is not an ADR";
    case LD64_GOT_LO12_NC:
        return (insn & 0xFFC00000u) == 0xF9400000u ? NULL : "is not a 64-bit LDR (immediate)";
    case CALL26:
        return (insn & 0xFC000000u) == 0x94000000u ? NULL : "is not a BL";
    case JUMP26:
        return (insn & 0xFC000000u) == 0x14000000u ? NULL : "is not a B";
    case CONDBR19:
        return ((insn & 0xFF000010u) == 0x54000000u || (insn & 0x7E000000u) == 0x34000000u)
                   ? NULL : "is not a B.cond, CBZ or CBNZ";
    case TSTBR14:
        return (insn & 0x7E000000u) == 0x36000000u ? NULL : "is not a TBZ or TBNZ";
    default:
        return NULL;   /* data relocations */
    }
}

/* ldr x16, .+8; br x16; .quad target */
void pk_stub_write_aarch64(uint8_t *at, uint64_t target) {
    pk_put32(at, 0x58000050u);
    pk_put32(at + 4, 0xD61F0200u);
    pk_put64(at + 8, target);
}

static uint64_t page_of(uint64_t x) { return x & ~(uint64_t)0xFFF; }

static void set_adr_imm(uint8_t *p, int64_t imm21) {
    uint32_t insn = pk_get32(p);
    uint32_t lo = (uint32_t)imm21 & 3u, hi = ((uint32_t)(imm21 >> 2)) & 0x7FFFFu;
    insn = (insn & ~((3u << 29) | (0x7FFFFu << 5))) | (lo << 29) | (hi << 5);
    pk_put32(p, insn);
}

static void set_field(uint8_t *p, uint32_t value, int shift, int bits) {
    uint32_t mask = ((bits == 32) ? 0xFFFFFFFFu : ((1u << bits) - 1u)) << shift;
    pk_put32(p, (pk_get32(p) & ~mask) | ((value << shift) & mask));
}

int pk_reloc_apply_aarch64(pk_elf_ctx *c, const pk_reloc_site *s, uint32_t type, size_t sym,
                           int64_t addend) {
    uint64_t S = c->sym_addr[sym], P = s->addr, X = S + (uint64_t)addend;
    int64_t v;
    int width = pk_reloc_width_aarch64(type);
    if (width <= 0) return pk_reloc_fail(c, s, type, sym, "unsupported relocation type");
    if (s->room < (size_t)width) return pk_reloc_fail(c, s, type, sym, "patch runs past its section");
    if ((type == MOVW_UABS_G0 && X >> 16) || (type == MOVW_UABS_G1 && X >> 32) ||
        (type == MOVW_UABS_G2 && X >> 48))
        return pk_reloc_fail(c, s, type, sym, "value does not fit the MOVW group");
    switch (type) {
    case ABS64: pk_put64(s->p, X); return 0;
    case PREL64: pk_put64(s->p, X - P); return 0;
    case PREL32:
        v = (int64_t)(X - P);
        if (v < INT32_MIN || v > (int64_t)UINT32_MAX)
            return pk_reloc_fail(c, s, type, sym, "target is further than +-2 GiB");
        pk_put32(s->p, (uint32_t)v);
        return 0;
    case MOVW_UABS_G0: case MOVW_UABS_G0_NC: set_field(s->p, (uint32_t)(X & 0xFFFF), 5, 16); return 0;
    case MOVW_UABS_G1: case MOVW_UABS_G1_NC: set_field(s->p, (uint32_t)((X >> 16) & 0xFFFF), 5, 16); return 0;
    case MOVW_UABS_G2: case MOVW_UABS_G2_NC: set_field(s->p, (uint32_t)((X >> 32) & 0xFFFF), 5, 16); return 0;
    case MOVW_UABS_G3: set_field(s->p, (uint32_t)(X >> 48), 5, 16); return 0;
    case ADR_PREL_LO21:
        v = (int64_t)(X - P);
        if (v < -(1 << 20) || v >= (1 << 20))
            return pk_reloc_fail(c, s, type, sym, "target is further than +-1 MiB");
        set_adr_imm(s->p, v);
        return 0;
    case ADR_PREL_PG_HI21: case ADR_PREL_PG_HI21_NC:
        v = (int64_t)(page_of(X) - page_of(P)) >> 12;
        if (type == ADR_PREL_PG_HI21 && (v < -(1 << 20) || v >= (1 << 20)))
            return pk_reloc_fail(c, s, type, sym, "target page is further than +-4 GiB");
        set_adr_imm(s->p, v);
        return 0;
    case ADR_GOT_PAGE:
        v = (int64_t)(page_of((uint64_t)(uintptr_t)(c->base + c->got_slot[sym])) - page_of(P)) >> 12;
        if (v < -(1 << 20) || v >= (1 << 20))
            return pk_reloc_fail(c, s, type, sym, "GOT page out of range");
        set_adr_imm(s->p, v);
        return 0;
    case LD64_GOT_LO12_NC:
        set_field(s->p, (uint32_t)(((uint64_t)(uintptr_t)(c->base + c->got_slot[sym]) & 0xFFF) >> 3),
                  10, 12);
        return 0;
    case ADD_ABS_LO12_NC: case LDST8_ABS_LO12_NC: set_field(s->p, (uint32_t)(X & 0xFFF), 10, 12); return 0;
    case LDST16_ABS_LO12_NC: set_field(s->p, (uint32_t)((X & 0xFFF) >> 1), 10, 12); return 0;
    case LDST32_ABS_LO12_NC: set_field(s->p, (uint32_t)((X & 0xFFF) >> 2), 10, 12); return 0;
    case LDST64_ABS_LO12_NC: set_field(s->p, (uint32_t)((X & 0xFFF) >> 3), 10, 12); return 0;
    case LDST128_ABS_LO12_NC: set_field(s->p, (uint32_t)((X & 0xFFF) >> 4), 10, 12); return 0;
    case TSTBR14:
        v = (int64_t)(X - P);
        if (v < -(1 << 15) || v >= (1 << 15) || (v & 3))
            return pk_reloc_fail(c, s, type, sym, "branch target out of range");
        set_field(s->p, (uint32_t)(v >> 2), 5, 14);
        return 0;
    case CONDBR19:
        v = (int64_t)(X - P);
        if (v < -(1 << 20) || v >= (1 << 20) || (v & 3))
            return pk_reloc_fail(c, s, type, sym, "branch target out of range");
        set_field(s->p, (uint32_t)(v >> 2), 5, 19);
        return 0;
    case JUMP26: case CALL26:
        v = (int64_t)(X - P);
        if (c->sym_undef[sym] || v < -(1 << 27) || v >= (1 << 27)) {
            if (c->stub_slot[sym] == PK_NO_SLOT)
                return pk_reloc_fail(c, s, type, sym, "branch target further than +-128 MiB");
            v = (int64_t)((uint64_t)(uintptr_t)(c->base + c->stub_slot[sym]) + (uint64_t)addend - P);
            if (v < -(1 << 27) || v >= (1 << 27))
                return pk_reloc_fail(c, s, type, sym, "trampoline out of range");
        }
        set_field(s->p, (uint32_t)(v >> 2), 0, 26);
        return 0;
    default:
        return pk_reloc_fail(c, s, type, sym, "unsupported relocation type");
    }
}

/* Structure checks of an ELF relocatable object before the loader (elf_loader.c) trusts it.
 *
 * The rules are those of the Python CPU runtime (backends/llvm/polykern_llvm/runtime/objfile.py):
 * every section header (type, flags, offset, size, alignment, links, name), the symbol table
 * and its string table, and every relocation (section, symbol, type, place) is checked, so that
 * damage is a PK_ERR_LOAD naming what is wrong and where (byte offset in the object), never a
 * crash or a silently different program. One addition: COMMON symbols (C's -fcommon) are
 * accepted when they are global data with a power-of-two alignment.
 * What is not checked is what the object means: instruction bytes, in-range symbol values,
 * relocation places and addends (the program, as with a shared library). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_internal.h"

#define PK_MAX_ALIGN 4096u   /* the same verdict on every host, whatever its page size */
#define SHT_X86_64_UNWIND_ 0x70000001u
#define NAME_MAX_SHOWN 48

typedef struct span {
    uint64_t lo, hi;
    size_t what;   /* section index; (size_t)-1 header, (size_t)-2 section headers */
} span;

typedef struct site {
    uint64_t off;
    size_t width, k;
    uint64_t where;
} site;

static int bad(pk_elf_ctx *c, uint64_t where, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int bad(pk_elf_ctx *c, uint64_t where, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pk_fail(c->err, PK_ERR_LOAD, "CPU object: malformed ELF object: %s (at byte offset "
                   "%llu of the object)", msg, (unsigned long long)where);
}

/* A name from the object, printable: control and non-ASCII bytes as \xNN, cut after a while. */
static const char *shown(const char *s, char out[NAME_MAX_SHOWN + 8]) {
    size_t o = 0;
    for (; *s && o < NAME_MAX_SHOWN; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch < 0x7F && ch != '\\' && ch != '\'') out[o++] = (char)ch;
        else o += (size_t)snprintf(out + o, 5, "\\x%02x", ch);
    }
    if (*s) { memcpy(out + o, "...", 3); o += 3; }
    out[o] = 0;
    return out;
}

static int is_pow2(uint64_t v) { return (v & (v - 1)) == 0; }

static int by_lo(const void *a, const void *b) {
    const span *x = (const span *)a, *y = (const span *)b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

static int by_off(const void *a, const void *b) {
    const site *x = (const site *)a, *y = (const site *)b;
    return x->off < y->off ? -1 : x->off > y->off ? 1 : 0;
}

static void span_name(const span *s, char *out, size_t n) {
    if (s->what == (size_t)-1) snprintf(out, n, "the ELF header");
    else if (s->what == (size_t)-2) snprintf(out, n, "the section headers");
    else snprintf(out, n, "section %zu", s->what);
}

/* A string table: a non-empty STRTAB section that starts and ends with NUL. */
static int strtab_ok(pk_elf_ctx *c, size_t i, const char *what, const char **tab, size_t *size) {
    const Elf64_Shdr *s = &c->sh[i];
    if (s->sh_type != SHT_STRTAB || s->sh_size == 0)
        return bad(c, 0, "%s (section %zu) is not a string table", what, i);
    *tab = (const char *)c->obj + s->sh_offset;
    *size = (size_t)s->sh_size;
    if ((*tab)[0] != 0 || (*tab)[*size - 1] != 0)
        return bad(c, s->sh_offset, "%s (section %zu) does not start and end with NUL", what, i);
    return 0;
}

static uint64_t shdr_at(const pk_elf_ctx *c, size_t i, unsigned field) {
    return c->shoff + i * sizeof(Elf64_Shdr) + field;
}

/* Bounds, alignment and overlap of every section; the section name table. */
static int check_sections(pk_elf_ctx *c) {
    size_t i, n = 0;
    span *used;
    static const Elf64_Shdr zero;
    char a[32], b[32];
    if (memcmp(&c->sh[0], &zero, sizeof zero) != 0)
        return bad(c, c->shoff, "section header 0 is not all zeros (extended numbering is not "
                   "supported)");
    used = (span *)malloc((c->shnum + 2) * sizeof *used);
    if (!used) return pk_fail(c->err, PK_ERR_NOMEM, "out of memory loading the CPU object");
    used[n].lo = 0, used[n].hi = sizeof(Elf64_Ehdr), used[n++].what = (size_t)-1;
    used[n].lo = c->shoff, used[n].hi = c->shoff + c->shnum * sizeof(Elf64_Shdr);
    used[n++].what = (size_t)-2;
    for (i = 1; i < c->shnum; i++) {
        const Elf64_Shdr *s = &c->sh[i];
        if (s->sh_link >= c->shnum) {
            free(used);
            return bad(c, shdr_at(c, i, 40), "section %zu links to section %u of %zu", i,
                       s->sh_link, c->shnum);
        }
        if (!is_pow2(s->sh_addralign)) {
            free(used);
            return bad(c, shdr_at(c, i, 48), "section %zu alignment %llu is not a power of two",
                       i, (unsigned long long)s->sh_addralign);
        }
        if (s->sh_type == SHT_NOBITS || s->sh_type == SHT_NULL || s->sh_size == 0) continue;
        if (s->sh_offset > c->size || s->sh_size > c->size - s->sh_offset) {
            free(used);
            return bad(c, shdr_at(c, i, 24), "section %zu (offset %llu, %llu bytes) is out of "
                       "bounds of the %zu-byte object", i, (unsigned long long)s->sh_offset,
                       (unsigned long long)s->sh_size, c->size);
        }
        /* GNU as (as in Debian sid) leaves data sections (.data.rel.ro, .rodata.cst32) at file
         * offsets their alignment does not divide: legal (sh_addralign constrains addresses), and
         * harmless since the loader copies sections to aligned memory. Code must stay aligned. */
        int data = !(s->sh_flags & SHF_EXECINSTR);
        if (s->sh_addralign > 1 && s->sh_offset % s->sh_addralign && !data) {
            free(used);
            return bad(c, shdr_at(c, i, 24), "section %zu offset %llu is not a multiple of its "
                       "alignment %llu", i, (unsigned long long)s->sh_offset,
                       (unsigned long long)s->sh_addralign);
        }
        used[n].lo = s->sh_offset, used[n].hi = s->sh_offset + s->sh_size, used[n++].what = i;
    }
    qsort(used, n, sizeof *used, by_lo);
    for (i = 1; i < n; i++)
        if (used[i].lo < used[i - 1].hi) {
            uint64_t at = used[i].lo;
            span_name(&used[i], a, sizeof a);
            span_name(&used[i - 1], b, sizeof b);
            free(used);
            return bad(c, at, "%s overlaps %s", a, b);
        }
    free(used);
    if (strtab_ok(c, c->shstrndx, "the section name table", &c->shstr, &c->shstr_size))
        return PK_ERR_LOAD;
    for (i = 1; i < c->shnum; i++)
        if (c->sh[i].sh_name >= c->shstr_size)
            return bad(c, shdr_at(c, i, 0), "section %zu: name offset %u is outside its string "
                       "table (%zu bytes)", i, c->sh[i].sh_name, c->shstr_size);
    return 0;
}

static int starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int loadable_type(uint32_t t) {
    return t == SHT_PROGBITS || t == SHT_NOBITS || t == SHT_NOTE || t == SHT_X86_64_UNWIND_;
}

/* What each section's type and flags promise; finds the symbol table and the loaded sections. */
static int check_kinds(pk_elf_ctx *c, uint8_t *loaded) {
    size_t i, found = 0;
    char nm[NAME_MAX_SHOWN + 8];
    for (i = 1; i < c->shnum; i++)
        if (c->sh[i].sh_type == SHT_SYMTAB) { c->symtab = i; found++; }
    if (found != 1) return bad(c, c->shoff, "expected one symbol table, found %zu", found);
    for (i = 1; i < c->shnum; i++) {
        const Elf64_Shdr *s = &c->sh[i];
        const char *name = c->shstr + s->sh_name;
        uint32_t t = s->sh_type;
        uint64_t f = s->sh_flags;
        shown(name, nm);
        if ((strcmp(name, ".symtab") == 0) != (t == SHT_SYMTAB) ||
            (strcmp(name, ".strtab") == 0 && t != SHT_STRTAB))
            return bad(c, shdr_at(c, i, 4), "section %zu '%s' has type %u, which its name does "
                       "not allow", i, nm, t);
        if (starts(name, ".rela") != (t == SHT_RELA) || (starts(name, ".rel.") && t != SHT_REL))
            return bad(c, shdr_at(c, i, 4), "section %zu '%s': relocation name and type %u "
                       "disagree", i, nm, t);
        if (t == SHT_SYMTAB || t == SHT_RELA || t == SHT_REL) {
            uint64_t want = t == SHT_REL ? sizeof(Elf64_Rel) : 24;
            if (s->sh_entsize != want || s->sh_size % want || (f & SHF_ALLOC))
                return bad(c, shdr_at(c, i, 8), "section %zu '%s': entry size %llu, size %llu, "
                           "flags 0x%llx are not those of a %s table", i, nm,
                           (unsigned long long)s->sh_entsize, (unsigned long long)s->sh_size,
                           (unsigned long long)f, t == SHT_SYMTAB ? "symbol" : "relocation");
        }
        if (!(f & SHF_ALLOC)) continue;
        if (!loadable_type(t)) {
            if (t == SHT_INIT_ARRAY || t == SHT_FINI_ARRAY || t == SHT_PREINIT_ARRAY)
                return bad(c, shdr_at(c, i, 4), "section %zu '%s': constructors/destructors are "
                           "not supported in kernels", i, nm);
            return bad(c, shdr_at(c, i, 4), "section %zu '%s': loaded section of unsupported "
                       "type %u", i, nm, t);
        }
        if (f & (SHF_TLS | SHF_COMPRESSED))
            return bad(c, shdr_at(c, i, 8), "section %zu '%s': thread-local or compressed "
                       "sections are not supported", i, nm);
        if ((f & SHF_WRITE) && (f & SHF_EXECINSTR))
            return bad(c, shdr_at(c, i, 8), "section %zu '%s' is both writable and executable",
                       i, nm);
        if (t == SHT_NOBITS && ((f & SHF_EXECINSTR) || !(f & SHF_WRITE)))
            return bad(c, shdr_at(c, i, 4), "section %zu '%s': a zero-filled (NOBITS) section "
                       "must be writable data", i, nm);
        if (s->sh_addralign > PK_MAX_ALIGN || s->sh_size > PK_MAX_IMAGE)
            return bad(c, shdr_at(c, i, 32), "section %zu '%s': alignment %llu or size %llu is "
                       "unsupported", i, nm, (unsigned long long)s->sh_addralign,
                       (unsigned long long)s->sh_size);
        loaded[i] = 1;
    }
    return 0;
}

static int check_symbols(pk_elf_ctx *c, const uint8_t *loaded) {
    const Elf64_Shdr *st = &c->sh[c->symtab];
    const char *strs;
    size_t strs_size, i, count = (size_t)(st->sh_size / sizeof(Elf64_Sym));
    char nm[NAME_MAX_SHOWN + 8];
    static const Elf64_Sym zero;
    if (strtab_ok(c, st->sh_link, "the symbol string table", &strs, &strs_size)) return PK_ERR_LOAD;
    if (count == 0 || st->sh_info == 0 || st->sh_info > count)
        return bad(c, st->sh_offset, "symbol table: %zu symbols, first global %u", count,
                   st->sh_info);
    for (i = 0; i < count; i++) {
        uint64_t where = st->sh_offset + i * sizeof(Elf64_Sym);
        Elf64_Sym s;
        int typ, bind;
        memcpy(&s, c->obj + where, sizeof s);
        if (i == 0) {
            if (memcmp(&s, &zero, sizeof s) != 0) return bad(c, where, "symbol 0 is not all zeros");
            continue;
        }
        if (s.st_name >= strs_size)
            return bad(c, where, "symbol %zu: name offset %u is outside its string table (%zu "
                       "bytes)", i, s.st_name, strs_size);
        shown(strs + s.st_name, nm);
        typ = ELF64_ST_TYPE(s.st_info);
        bind = ELF64_ST_BIND(s.st_info);
        if ((bind != STB_LOCAL && bind != STB_GLOBAL && bind != STB_WEAK) ||
            (bind == STB_LOCAL) != (i < st->sh_info))
            return bad(c, where + 4, "symbol %zu '%s': binding %d (locals come first: the table "
                       "says %u)", i, nm, bind, st->sh_info);
        if (typ != STT_NOTYPE && typ != STT_OBJECT && typ != STT_FUNC && typ != STT_SECTION &&
            typ != STT_FILE)
            return bad(c, where + 4, "symbol %zu '%s': unsupported type %d (thread-local, common "
                       "or indirect)", i, nm, typ);
        if (s.st_shndx == SHN_UNDEF) {
            if (bind == STB_LOCAL || s.st_value || typ == STT_SECTION || typ == STT_FILE || !nm[0])
                return bad(c, where, "symbol %zu '%s': malformed undefined symbol", i, nm);
        } else if (s.st_shndx == SHN_ABS) {
        } else if (s.st_shndx == SHN_COMMON) {
            if (bind == STB_LOCAL || (typ != STT_OBJECT && typ != STT_NOTYPE) || !nm[0] ||
                s.st_value == 0 || !is_pow2(s.st_value) || s.st_value > PK_MAX_ALIGN ||
                s.st_size > PK_MAX_IMAGE)
                return bad(c, where, "symbol %zu '%s': malformed COMMON symbol (alignment %llu, "
                           "size %llu)", i, nm, (unsigned long long)s.st_value,
                           (unsigned long long)s.st_size);
        } else if (s.st_shndx >= c->shnum) {
            return bad(c, where + 6, "symbol %zu '%s' is in section %u, but there are %zu%s", i,
                       nm, s.st_shndx, c->shnum, s.st_shndx >= SHN_LORESERVE
                       ? " (special section indices other than ABS and COMMON are not supported)"
                       : "");
        } else {
            const Elf64_Shdr *sec = &c->sh[s.st_shndx];
            if (s.st_value > sec->sh_size || s.st_size > sec->sh_size - s.st_value)
                return bad(c, where + 8, "symbol %zu '%s' (value %llu, size %llu) lies outside "
                           "its section %u (%llu bytes)", i, nm, (unsigned long long)s.st_value,
                           (unsigned long long)s.st_size, s.st_shndx,
                           (unsigned long long)sec->sh_size);
            if (typ == STT_FUNC && (!loaded[s.st_shndx] || !(sec->sh_flags & SHF_EXECINSTR)))
                return bad(c, where + 6, "function '%s' is in section %u, which is not loaded "
                           "executable", nm, s.st_shndx);
            if (typ == STT_SECTION && s.st_value)
                return bad(c, where + 8, "section symbol %zu has value %llu", i,
                           (unsigned long long)s.st_value);
        }
        if (typ == STT_FILE && (s.st_shndx != SHN_ABS || bind != STB_LOCAL))
            return bad(c, where + 4, "file symbol %zu '%s' is not a local absolute symbol", i, nm);
    }
    c->strtab = strs;
    c->strtab_size = strs_size;
    c->nsyms = count;
    return 0;
}

static int check_rela_entry(pk_elf_ctx *c, size_t ri, size_t k, const Elf64_Rela *r,
                            uint64_t where, const uint8_t *loaded, site *sites, size_t *nsites) {
    const Elf64_Shdr *rs = &c->sh[ri], *ts = &c->sh[rs->sh_info];
    uint32_t typ = (uint32_t)ELF64_R_TYPE(r->r_info);
    size_t symi = (size_t)ELF64_R_SYM(r->r_info);
    Elf64_Sym s;
    int width, flags, external, styp;
    char rn[NAME_MAX_SHOWN + 8], sn[NAME_MAX_SHOWN + 8];
    shown(c->shstr + rs->sh_name, rn);
    memcpy(&s, c->obj + c->sh[c->symtab].sh_offset + symi * sizeof s, sizeof s);
    shown(c->strtab + s.st_name, sn);
    styp = ELF64_ST_TYPE(s.st_info);
    external = s.st_shndx == SHN_UNDEF && symi != 0 &&
               strcmp(c->strtab + s.st_name, "_GLOBAL_OFFSET_TABLE_") != 0;
    width = c->machine == EM_X86_64 ? pk_reloc_width_x86_64(typ) : pk_reloc_width_aarch64(typ);
    flags = c->machine == EM_X86_64 ? pk_reloc_flags_x86_64(typ) : pk_reloc_flags_aarch64(typ);
    if (width < 0 || (flags & (PK_RF_UNKNOWN | PK_RF_ABS32)))
        return bad(c, where + 8, "relocation %zu of '%s': unsupported %s relocation type %u%s", k,
                   rn, c->machine == EM_X86_64 ? "x86_64" : "aarch64", typ,
                   (flags & PK_RF_ABS32) ? " (absolute 32-bit: build position-independent)" : "");
    if (ts->sh_type == SHT_NOBITS || r->r_offset > ts->sh_size ||
        (uint64_t)width > ts->sh_size - r->r_offset)
        return bad(c, where, "relocation %zu of '%s' patches bytes %llu..%llu outside its section "
                   "(%llu bytes)", k, rn, (unsigned long long)r->r_offset,
                   (unsigned long long)(r->r_offset + (uint64_t)width),
                   (unsigned long long)ts->sh_size);
    if (typ == 0 || symi == 0)
        return bad(c, where + 8, "relocation %zu of '%s' has type NONE or no symbol", k, rn);
    if ((ts->sh_flags & SHF_EXECINSTR) && width > 4)
        return bad(c, where + 8, "relocation %zu of '%s': %d-byte relocation type %u in code "
                   "(large code model objects are not supported)", k, rn, width, typ);
    if ((flags & PK_RF_CALL) && !(external || styp == STT_FUNC))
        return bad(c, where + 8, "relocation %zu of '%s': a call or jump to '%s', which is not a "
                   "function", k, rn, sn);
    if ((flags & PK_RF_NEAR) && external)
        return bad(c, where + 8, "relocation %zu of '%s': relocation type %u reaches external "
                   "symbol '%s' directly (only calls and GOT loads can leave the image)", k, rn,
                   typ, sn);
    if (c->machine == EM_AARCH64 && width == 4) {
        const char *why = pk_reloc_insn_problem_aarch64(typ, pk_get32(c->obj + ts->sh_offset +
                                                                          r->r_offset));
        if (why)
            return bad(c, where + 8, "relocation %zu of '%s': the instruction that type %u "
                       "patches %s", k, rn, typ, why);
    }
    if (s.st_shndx != SHN_UNDEF && s.st_shndx < SHN_LORESERVE && !loaded[s.st_shndx])
        return bad(c, where + 8, "relocation %zu of '%s' refers to '%s' in section %u, which is "
                   "not loaded", k, rn, sn, s.st_shndx);
    sites[*nsites].off = r->r_offset;
    sites[*nsites].width = (size_t)width;
    sites[*nsites].k = k;
    sites[(*nsites)++].where = where;
    return 0;
}

static int check_relocations(pk_elf_ctx *c, const uint8_t *loaded) {
    size_t i, k;
    uint8_t *seen = (uint8_t *)calloc(c->shnum, 1), *referenced = (uint8_t *)calloc(c->nsyms, 1);
    site *sites = NULL;
    int rc = 0;
    char rn[NAME_MAX_SHOWN + 8];
    if (!seen || !referenced) {
        rc = pk_fail(c->err, PK_ERR_NOMEM, "out of memory loading the CPU object");
        goto out;
    }
    for (i = 1; i < c->shnum && !rc; i++) {
        const Elf64_Shdr *s = &c->sh[i];
        size_t n = (size_t)(s->sh_size / sizeof(Elf64_Rela)), nsites = 0;
        shown(c->shstr + s->sh_name, rn);
        if (s->sh_type == SHT_REL) {
            rc = bad(c, shdr_at(c, i, 4), "section %zu '%s': REL relocations are not supported "
                     "(RELA expected)", i, rn);
            break;
        }
        if (s->sh_type != SHT_RELA) continue;
        if (s->sh_link != c->symtab || s->sh_info == 0 || s->sh_info >= c->shnum ||
            s->sh_info == i) {
            rc = bad(c, shdr_at(c, i, 40), "relocation section %zu '%s' links symbols %u and "
                     "patches section %u", i, rn, s->sh_link, s->sh_info);
            break;
        }
        if (strcmp(c->shstr + s->sh_name + 5, c->shstr + c->sh[s->sh_info].sh_name) != 0 ||
            seen[s->sh_info]) {
            rc = bad(c, shdr_at(c, i, 44), "relocation section %zu '%s' does not match the "
                     "section it patches (%u)", i, rn, s->sh_info);
            break;
        }
        seen[s->sh_info] = 1;
        free(sites);
        sites = (site *)malloc((n ? n : 1) * sizeof *sites);
        if (!sites) {
            rc = pk_fail(c->err, PK_ERR_NOMEM, "out of memory loading the CPU object");
            break;
        }
        for (k = 0; k < n && !rc; k++) {
            uint64_t where = s->sh_offset + k * sizeof(Elf64_Rela);
            Elf64_Rela r;
            memcpy(&r, c->obj + where, sizeof r);
            if (ELF64_R_SYM(r.r_info) >= c->nsyms) {
                rc = bad(c, where + 8, "relocation %zu of '%s' names symbol %llu of %zu", k, rn,
                         (unsigned long long)ELF64_R_SYM(r.r_info), c->nsyms);
                break;
            }
            referenced[ELF64_R_SYM(r.r_info)] = 1;
            if (!loaded[s->sh_info]) continue;   /* debug information: never applied */
            rc = check_rela_entry(c, i, k, &r, where, loaded, sites, &nsites);
        }
        if (rc) break;
        qsort(sites, nsites, sizeof *sites, by_off);
        for (k = 1; k < nsites; k++)
            if (sites[k].off < sites[k - 1].off + sites[k - 1].width) {
                rc = bad(c, sites[k].where, "relocations %zu and %zu of '%s' patch overlapping "
                         "bytes (%llu and %llu)", sites[k - 1].k, sites[k].k, rn,
                         (unsigned long long)sites[k - 1].off, (unsigned long long)sites[k].off);
                break;
            }
    }
    for (i = 1; i < c->nsyms && !rc; i++) {
        Elf64_Sym s;
        memcpy(&s, c->obj + c->sh[c->symtab].sh_offset + i * sizeof s, sizeof s);
        if (s.st_shndx == SHN_UNDEF && !referenced[i] &&
            strcmp(c->strtab + s.st_name, "_GLOBAL_OFFSET_TABLE_") != 0)   /* gcc declares it */
            rc = bad(c, c->sh[c->symtab].sh_offset + i * sizeof s, "undefined symbol '%s' is "
                     "never relocated (is a relocation section missing?)",
                     shown(c->strtab + s.st_name, rn));
        /* a local .L label (a constant-pool entry) is in the symbol table only for relocations to use:
           one that none uses means relocations were lost, and the code would run unpatched */
        else if (!referenced[i] && ELF64_ST_BIND(s.st_info) == STB_LOCAL && ELF64_ST_TYPE(s.st_info) == STT_NOTYPE &&
                 s.st_shndx > 0 && s.st_shndx < c->shnum && loaded[s.st_shndx] &&
                 strncmp(c->strtab + s.st_name, ".L", 2) == 0)
            rc = bad(c, c->sh[c->symtab].sh_offset + i * sizeof s, "local label '%s' of section %u is "
                     "never relocated (is a relocation section missing or shortened?)",
                     shown(c->strtab + s.st_name, rn), (unsigned)s.st_shndx);
    }
out:
    free(seen);
    free(referenced);
    free(sites);
    return rc;
}

int pk_elf_check(pk_elf_ctx *c) {
    uint8_t *loaded = (uint8_t *)calloc(c->shnum, 1);
    int rc;
    if (!loaded) return pk_fail(c->err, PK_ERR_NOMEM, "out of memory loading the CPU object");
    rc = check_sections(c);
    if (!rc) rc = check_kinds(c, loaded);
    if (!rc) rc = check_symbols(c, loaded);
    if (!rc) rc = check_relocations(c, loaded);
    free(loaded);
    return rc;
}

/* A loader for relocatable ELF objects (ET_REL), the payload of "llvm" modules with fmt "o".
 *
 * It lays every SHF_ALLOC section into one private mapping grouped by protection
 * (text + call trampolines | read-only data + GOT | writable data, bss, COMMON), applies the
 * RELA relocations of the host machine (x86-64 in elf_reloc_x86_64.c, aarch64 in
 * elf_reloc_aarch64.c), resolves undefined symbols from the process with dlsym (then libm,
 * then libgcc_s), and finally makes text read+execute and the rest of the first two groups
 * read-only: the image is never writable and executable at once (W^X).
 * The object's structure is checked first (elf_check.c): every offset, size, index, type and
 * flag the loader trusts, so that damage is an error, never a crash or a silent misrun. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf_internal.h"

typedef struct exported {
    char *name;
    void *addr;
} exported;

struct pk_elf_image {
    uint8_t *base;
    size_t total;
    exported *syms;
    size_t nsyms;
};

static const char *machine_name(uint16_t m) {
    switch (m) {
    case EM_X86_64: return "x86_64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case 164: return "hexagon";
    case EM_S390: return "s390x";
    default: return "unknown";
    }
}

static uint16_t host_machine(void) {
#if defined(__x86_64__)
    return EM_X86_64;
#elif defined(__aarch64__)
    return EM_AARCH64;
#else
    return 0;
#endif
}

const char *pk_host_machine_name(void) { return machine_name(host_machine()); }

void pk_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
void pk_put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
uint32_t pk_get32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

const char *pk_elf_sym_name(const pk_elf_ctx *c, size_t sym) {
    const Elf64_Sym *s = &c->syms[sym];
    if (ELF64_ST_TYPE(s->st_info) == STT_SECTION && s->st_shndx < c->shnum) return "<section>";
    if (s->st_name >= c->strtab_size) return "?";
    return c->strtab + s->st_name;   /* NUL-termination checked at load */
}

int pk_reloc_fail(pk_elf_ctx *c, const pk_reloc_site *s, uint32_t type, size_t sym,
                  const char *why) {
    return pk_fail(c->err, PK_ERR_LOAD,
                   "CPU object: relocation type %u against '%s' in section %s: %s", type,
                   pk_elf_sym_name(c, sym), s->section, why);
}

static int range_ok(uint64_t off, uint64_t len, size_t size) {
    return off <= size && len <= size - off;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

static const char *sec_name(const pk_elf_ctx *c, size_t i, const char *shstr, size_t shstr_size) {
    if (!shstr || c->sh[i].sh_name >= shstr_size) return "?";
    return shstr + c->sh[i].sh_name;
}

static int flags_of(const pk_elf_ctx *c, uint32_t type) {
    return c->machine == EM_X86_64 ? pk_reloc_flags_x86_64(type) : pk_reloc_flags_aarch64(type);
}

static void *resolve_external(const char *name) {
    static const char *libs[] = {"libm.so.6", "libgcc_s.so.1"};
    void *p = dlsym(RTLD_DEFAULT, name);
    size_t i;
    for (i = 0; !p && i < sizeof libs / sizeof libs[0]; i++) {
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (!h) h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
        if (h) p = dlsym(h, name);   /* handle kept open: the kernel keeps calling into it */
    }
    return p;
}

static int check_header(pk_elf_ctx *c, Elf64_Ehdr *eh) {
    if (c->size < sizeof *eh || memcmp(c->obj, ELFMAG, SELFMAG) != 0)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: not an ELF file (bad magic)");
    memcpy(eh, c->obj, sizeof *eh);
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB)
        return pk_fail(c->err, PK_ERR_LOAD,
                       "CPU object: only 64-bit little-endian ELF is supported (class %u, data %u)",
                       eh->e_ident[EI_CLASS], eh->e_ident[EI_DATA]);
    if (eh->e_ident[EI_VERSION] != EV_CURRENT || eh->e_version != EV_CURRENT)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: unknown ELF version %u/%u",
                       eh->e_ident[EI_VERSION], eh->e_version);
    if (eh->e_type != ET_REL)
        return pk_fail(c->err, PK_ERR_LOAD,
                       "CPU object: ELF type %u is not a relocatable object (ET_REL)", eh->e_type);
    if (eh->e_machine != c->machine)
        return pk_fail(c->err, PK_ERR_LOAD,
                       "CPU object is for %s (ELF machine %u) but this host is %s; build the "
                       "artifact for this host (llvm -mtriple=<host triple>) or run it on a %s machine",
                       machine_name(eh->e_machine), eh->e_machine, machine_name(c->machine),
                       machine_name(eh->e_machine));
    if (eh->e_ehsize != sizeof *eh)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: ELF header size %u is not %zu",
                       eh->e_ehsize, sizeof *eh);
    if (eh->e_phnum || eh->e_phoff)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: a relocatable object has no program "
                       "headers (offset %llu, %u entries)", (unsigned long long)eh->e_phoff,
                       eh->e_phnum);
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0 || eh->e_shoff % 8 ||
        eh->e_shoff < sizeof *eh ||
        !range_ok(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), c->size))
        return pk_fail(c->err, PK_ERR_LOAD,
                       "CPU object: section header table (offset %llu, %u x %u bytes) is out of "
                       "bounds or unsupported", (unsigned long long)eh->e_shoff, eh->e_shnum,
                       eh->e_shentsize);
    if (eh->e_shstrndx == 0 || eh->e_shstrndx >= eh->e_shnum)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: bad section name table index %u",
                       eh->e_shstrndx);
    return 0;
}

/* Copies the symbol table (checked by pk_elf_check) and allocates the per-symbol state. */
static int load_symtab(pk_elf_ctx *c) {
    const Elf64_Shdr *s = &c->sh[c->symtab];
    size_t i, n = c->nsyms;
    c->syms = (Elf64_Sym *)calloc(n, sizeof(Elf64_Sym));
    c->sym_addr = (uint64_t *)calloc(n, sizeof(uint64_t));
    c->sym_undef = (uint8_t *)calloc(n, 1);
    c->sym_used = (uint8_t *)calloc(n, 1);
    c->got_slot = (size_t *)malloc(n * sizeof(size_t));
    c->stub_slot = (size_t *)malloc(n * sizeof(size_t));
    if (!c->syms || !c->sym_addr || !c->sym_undef || !c->sym_used || !c->got_slot ||
        !c->stub_slot)
        return pk_fail(c->err, PK_ERR_NOMEM, "out of memory loading the CPU object");
    memcpy(c->syms, c->obj + s->sh_offset, n * sizeof(Elf64_Sym));
    for (i = 0; i < n; i++) c->got_slot[i] = c->stub_slot[i] = PK_NO_SLOT;
    return 0;
}

/* Walk every RELA section that patches a loaded section; `fn` sees each entry. */
typedef int (*rela_visit)(pk_elf_ctx *c, size_t target, const Elf64_Rela *r, void *u);

static int each_rela(pk_elf_ctx *c, const char *shstr, size_t shstr_size, rela_visit fn, void *u) {
    size_t i, k, n;
    for (i = 0; i < c->shnum; i++) {
        const Elf64_Shdr *s = &c->sh[i];
        if (s->sh_type == SHT_REL && s->sh_info < c->shnum && c->sec_off[s->sh_info] != PK_NO_SLOT)
            return pk_fail(c->err, PK_ERR_LOAD, "CPU object: REL relocations (section %s) are not "
                           "supported; expected RELA", sec_name(c, i, shstr, shstr_size));
        if (s->sh_type != SHT_RELA) continue;
        if (s->sh_info >= c->shnum)
            return pk_fail(c->err, PK_ERR_LOAD, "CPU object: relocation section %s targets "
                           "section %u of %zu", sec_name(c, i, shstr, shstr_size), s->sh_info,
                           c->shnum);
        if (c->sec_off[s->sh_info] == PK_NO_SLOT) continue;   /* debug info etc. */
        if (s->sh_entsize != sizeof(Elf64_Rela) || s->sh_size % sizeof(Elf64_Rela) ||
            s->sh_link >= c->shnum || c->sh[s->sh_link].sh_type != SHT_SYMTAB)
            return pk_fail(c->err, PK_ERR_LOAD, "CPU object: malformed relocation section %s",
                           sec_name(c, i, shstr, shstr_size));
        n = (size_t)(s->sh_size / sizeof(Elf64_Rela));
        for (k = 0; k < n; k++) {
            Elf64_Rela r;
            memcpy(&r, c->obj + s->sh_offset + k * sizeof r, sizeof r);
            if (ELF64_R_SYM(r.r_info) >= c->nsyms)
                return pk_fail(c->err, PK_ERR_LOAD, "CPU object: relocation %zu of %s names "
                               "symbol %llu of %zu", k, sec_name(c, i, shstr, shstr_size),
                               (unsigned long long)ELF64_R_SYM(r.r_info), c->nsyms);
            if (fn(c, (size_t)s->sh_info, &r, u)) return PK_ERR_LOAD;
        }
    }
    return 0;
}

typedef struct scan_state {
    size_t ngot, nstub;
} scan_state;

static int scan_one(pk_elf_ctx *c, size_t target, const Elf64_Rela *r, void *u) {
    scan_state *st = (scan_state *)u;
    uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info);
    size_t sym = (size_t)ELF64_R_SYM(r->r_info);
    int f = flags_of(c, type);
    (void)target;
    if (f & (PK_RF_UNKNOWN | PK_RF_ABS32))
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: unsupported %s relocation type %u "
                       "(against '%s')", machine_name(c->machine), type, pk_elf_sym_name(c, sym));
    c->sym_used[sym] = 1;
    if ((f & PK_RF_GOT) && c->got_slot[sym] == PK_NO_SLOT) c->got_slot[sym] = st->ngot++;
    if ((f & PK_RF_BRANCH) && c->syms[sym].st_shndx == SHN_UNDEF && sym != 0 &&
        c->stub_slot[sym] == PK_NO_SLOT)
        c->stub_slot[sym] = st->nstub++;
    return 0;
}

static int apply_one(pk_elf_ctx *c, size_t target, const Elf64_Rela *r, void *u) {
    const Elf64_Shdr *ts = &c->sh[target];
    uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info);
    size_t sym = (size_t)ELF64_R_SYM(r->r_info);
    pk_reloc_site site;
    site.section = (const char *)u;
    if (r->r_offset >= ts->sh_size)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: relocation offset %llu is outside its "
                       "section (%llu bytes)", (unsigned long long)r->r_offset,
                       (unsigned long long)ts->sh_size);
    if (ts->sh_type == SHT_NOBITS)
        return pk_fail(c->err, PK_ERR_LOAD, "CPU object: relocation in a NOBITS section");
    site.p = c->base + c->sec_off[target] + r->r_offset;
    site.addr = (uint64_t)(uintptr_t)site.p;
    site.room = (size_t)(ts->sh_size - r->r_offset);
    if (c->machine == EM_X86_64) return pk_reloc_apply_x86_64(c, &site, type, sym, r->r_addend);
    return pk_reloc_apply_aarch64(c, &site, type, sym, r->r_addend);
}

static void ctx_free(pk_elf_ctx *c) {
    free(c->sh);
    free(c->sec_off);
    free(c->syms);
    free(c->sym_addr);
    free(c->sym_undef);
    free(c->sym_used);
    free(c->got_slot);
    free(c->stub_slot);
}

static pk_elf_image *fail_image(pk_elf_ctx *c, pk_elf_image *img) {
    if (c->base) munmap(c->base, c->total);
    if (img) {
        size_t i;
        for (i = 0; i < img->nsyms; i++) free(img->syms[i].name);
        free(img->syms);
        free(img);
    }
    ctx_free(c);
    return NULL;
}

pk_elf_image *pk_elf_load(const uint8_t *obj, size_t size, pk_error *err) {
    pk_elf_ctx c;
    Elf64_Ehdr eh;
    pk_elf_image *img = NULL;
    const char *shstr = NULL;
    size_t shstr_size = 0, i, page = (size_t)sysconf(_SC_PAGESIZE);
    size_t grp_end[3], off, stub_base = 0, got_base = 0;
    scan_state scan;
    int group;

    memset(&c, 0, sizeof c);
    memset(&scan, 0, sizeof scan);
    c.obj = obj;
    c.size = size;
    c.err = err;
    c.machine = host_machine();
    if (c.machine == 0) {
        pk_fail(err, PK_ERR_UNAVAILABLE, "CPU objects can only be loaded on x86_64 and aarch64 "
                "hosts");
        return NULL;
    }
    if (check_header(&c, &eh)) return NULL;
    c.shnum = eh.e_shnum;
    c.sh = (Elf64_Shdr *)calloc(c.shnum, sizeof(Elf64_Shdr));
    c.sec_off = (size_t *)malloc(c.shnum * sizeof(size_t));
    if (!c.sh || !c.sec_off) {
        pk_fail(err, PK_ERR_NOMEM, "out of memory loading the CPU object");
        return fail_image(&c, NULL);
    }
    memcpy(c.sh, obj + eh.e_shoff, c.shnum * sizeof(Elf64_Shdr));
    c.shoff = eh.e_shoff;
    c.shstrndx = eh.e_shstrndx;
    for (i = 0; i < c.shnum; i++) c.sec_off[i] = PK_NO_SLOT;
    if (pk_elf_check(&c)) return fail_image(&c, NULL);
    shstr = c.shstr;
    shstr_size = c.shstr_size;
    if (load_symtab(&c)) return fail_image(&c, NULL);

    /* Which sections are loaded (checked once), then what the relocations need. */
    for (i = 1; i < c.shnum; i++) {
        const Elf64_Shdr *s = &c.sh[i];
        if (!(s->sh_flags & SHF_ALLOC)) continue;   /* checked: a loadable type */
        c.sec_off[i] = 0;   /* placeholder: loaded; real offset below */
    }
    if (each_rela(&c, shstr, shstr_size, scan_one, &scan)) return fail_image(&c, NULL);

    /* Lay out: group 0 text + trampolines (RX), 1 read-only + GOT (R), 2 writable (RW). */
    off = 0;
    for (group = 0; group < 3; group++) {
        for (i = 1; i < c.shnum; i++) {
            const Elf64_Shdr *s = &c.sh[i];
            uint64_t al = s->sh_addralign ? s->sh_addralign : 1;
            int g;
            if (c.sec_off[i] == PK_NO_SLOT) continue;
            g = (s->sh_flags & SHF_EXECINSTR) ? 0 : (s->sh_flags & SHF_WRITE) ? 2 : 1;
            if (g != group) continue;
            off = align_up(off, (size_t)al);
            c.sec_off[i] = off;
            off += (size_t)s->sh_size;
            if (off > PK_MAX_IMAGE) {
                pk_fail(err, PK_ERR_LOAD, "CPU object: image larger than 1 GiB");
                return fail_image(&c, NULL);
            }
        }
        if (group == 0) {
            off = align_up(off, PK_STUB_SIZE);
            stub_base = off;
            off += scan.nstub * PK_STUB_SIZE;
        } else if (group == 1) {
            off = align_up(off, 8);
            got_base = off;
            off += scan.ngot * 8;
        } else {
            for (i = 1; i < c.nsyms; i++) {   /* COMMON symbols: st_value is the alignment */
                Elf64_Sym *s = &c.syms[i];
                if (s->st_shndx != SHN_COMMON) continue;
                if (!s->st_value || (s->st_value & (s->st_value - 1)) || s->st_value > page ||
                    s->st_size > PK_MAX_IMAGE) {
                    pk_fail(err, PK_ERR_LOAD, "CPU object: bad COMMON symbol '%s'",
                            pk_elf_sym_name(&c, i));
                    return fail_image(&c, NULL);
                }
                off = align_up(off, (size_t)s->st_value);
                c.sym_addr[i] = off;   /* made absolute after mapping */
                off += (size_t)s->st_size;
                if (off > PK_MAX_IMAGE) {
                    pk_fail(err, PK_ERR_LOAD, "CPU object: image larger than 1 GiB");
                    return fail_image(&c, NULL);
                }
            }
        }
        off = align_up(off, page);
        grp_end[group] = off;
    }
    c.total = off ? off : page;

    {
        void *m = mmap(NULL, c.total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            pk_fail(err, PK_ERR_LOAD, "CPU object: cannot map %zu bytes", c.total);
            return fail_image(&c, NULL);
        }
        c.base = (uint8_t *)m;
        c.got_addr = (uint64_t)(uintptr_t)(c.base + got_base);
    }
    for (i = 1; i < c.shnum; i++)
        if (c.sec_off[i] != PK_NO_SLOT && c.sh[i].sh_type != SHT_NOBITS && c.sh[i].sh_size)
            memcpy(c.base + c.sec_off[i], obj + c.sh[i].sh_offset, (size_t)c.sh[i].sh_size);

    /* Resolve symbols. */
    for (i = 1; i < c.nsyms; i++) {
        Elf64_Sym *s = &c.syms[i];
        int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
        const char *name = pk_elf_sym_name(&c, i);
        if (type == STT_TLS || type == STT_GNU_IFUNC) {
            pk_fail(err, PK_ERR_LOAD, "CPU object: symbol '%s' has unsupported type %d", name,
                    type);
            return fail_image(&c, NULL);
        }
        if (s->st_shndx == SHN_UNDEF) {
            void *p;
            c.sym_undef[i] = 1;
            if (strcmp(name, "_GLOBAL_OFFSET_TABLE_") == 0) {
                c.sym_addr[i] = c.got_addr;
                c.sym_undef[i] = 0;   /* inside the image: no trampoline needed */
                continue;
            }
            if (!c.sym_used[i]) continue;   /* declared but never referenced */
            p = resolve_external(name);
            if (!p && bind != STB_WEAK) {
                pk_fail(err, PK_ERR_LOAD, "CPU object: undefined symbol '%s' is not found in this "
                        "process, libm or libgcc_s", name);
                return fail_image(&c, NULL);
            }
            c.sym_addr[i] = (uint64_t)(uintptr_t)p;
        } else if (s->st_shndx == SHN_ABS) {
            c.sym_addr[i] = s->st_value;
        } else if (s->st_shndx == SHN_COMMON) {
            c.sym_addr[i] += (uint64_t)(uintptr_t)c.base;
        } else if (s->st_shndx < c.shnum && c.sec_off[s->st_shndx] != PK_NO_SLOT) {
            if (s->st_value > c.sh[s->st_shndx].sh_size) {
                pk_fail(err, PK_ERR_LOAD, "CPU object: symbol '%s' lies outside its section",
                        name);
                return fail_image(&c, NULL);
            }
            c.sym_addr[i] = (uint64_t)(uintptr_t)(c.base + c.sec_off[s->st_shndx]) + s->st_value;
        } else if (s->st_shndx >= c.shnum && s->st_shndx < SHN_LORESERVE) {
            pk_fail(err, PK_ERR_LOAD, "CPU object: symbol '%s' names section %u of %zu", name,
                    s->st_shndx, c.shnum);
            return fail_image(&c, NULL);
        } else if (s->st_shndx >= SHN_LORESERVE) {
            pk_fail(err, PK_ERR_LOAD, "CPU object: symbol '%s' has unsupported section index "
                    "0x%x", name, s->st_shndx);
            return fail_image(&c, NULL);
        } /* else: defined in a section that is not loaded (debug info): address 0 */
    }
    /* GOT slots and trampolines, then the relocations themselves. */
    for (i = 0; i < c.nsyms; i++) {
        if (c.got_slot[i] != PK_NO_SLOT) {
            c.got_slot[i] = got_base + c.got_slot[i] * 8;
            pk_put64(c.base + c.got_slot[i], c.sym_addr[i]);
        }
        if (c.stub_slot[i] != PK_NO_SLOT) {
            c.stub_slot[i] = stub_base + c.stub_slot[i] * PK_STUB_SIZE;
            if (c.machine == EM_X86_64)
                pk_stub_write_x86_64(c.base + c.stub_slot[i], c.sym_addr[i]);
            else
                pk_stub_write_aarch64(c.base + c.stub_slot[i], c.sym_addr[i]);
        }
    }
    for (i = 1; i < c.shnum; i++) {   /* validated by the scan above */
        const Elf64_Shdr *s = &c.sh[i];
        size_t k, n;
        if (s->sh_type != SHT_RELA || c.sec_off[s->sh_info] == PK_NO_SLOT) continue;
        n = (size_t)(s->sh_size / sizeof(Elf64_Rela));
        for (k = 0; k < n; k++) {
            Elf64_Rela r;
            memcpy(&r, obj + s->sh_offset + k * sizeof r, sizeof r);
            if (apply_one(&c, (size_t)s->sh_info, &r,
                          (void *)sec_name(&c, s->sh_info, shstr, shstr_size)))
                return fail_image(&c, NULL);
        }
    }
    /* W^X: text becomes read+execute, read-only data (and the GOT) read-only. */
    if ((grp_end[0] && mprotect(c.base, grp_end[0], PROT_READ | PROT_EXEC) != 0) ||
        (grp_end[1] > grp_end[0] &&
         mprotect(c.base + grp_end[0], grp_end[1] - grp_end[0], PROT_READ) != 0)) {
        pk_fail(err, PK_ERR_LOAD, "CPU object: mprotect failed (is W^X enforced differently "
                "here?)");
        return fail_image(&c, NULL);
    }
#if defined(__aarch64__)
    __builtin___clear_cache((char *)c.base, (char *)c.base + grp_end[0]);
#endif

    img = (pk_elf_image *)calloc(1, sizeof *img);
    if (!img) {
        pk_fail(err, PK_ERR_NOMEM, "out of memory");
        return fail_image(&c, NULL);
    }
    img->base = c.base;
    img->total = c.total;
    img->syms = (exported *)calloc(c.nsyms ? c.nsyms : 1, sizeof(exported));
    if (!img->syms) {
        pk_fail(err, PK_ERR_NOMEM, "out of memory");
        return fail_image(&c, img);
    }
    for (i = 1; i < c.nsyms; i++) {
        const Elf64_Sym *s = &c.syms[i];
        int bind = ELF64_ST_BIND(s->st_info);
        const char *name = pk_elf_sym_name(&c, i);
        /* global functions in the image (checked: in a loaded executable section); not an
         * absolute address, which a damaged st_shndx could make of a kernel */
        if ((bind != STB_GLOBAL && bind != STB_WEAK) || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
            s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE || !name[0])
            continue;
        img->syms[img->nsyms].name = strdup(name);
        img->syms[img->nsyms].addr = (void *)(uintptr_t)c.sym_addr[i];
        if (!img->syms[img->nsyms].name) {
            pk_fail(err, PK_ERR_NOMEM, "out of memory");
            return fail_image(&c, img);
        }
        img->nsyms++;
    }
    ctx_free(&c);
    return img;
}

void *pk_elf_symbol(const pk_elf_image *img, const char *name) {
    size_t i;
    for (i = 0; i < img->nsyms; i++)
        if (strcmp(img->syms[i].name, name) == 0) return img->syms[i].addr;
    return NULL;
}

void pk_elf_free(pk_elf_image *img) {
    size_t i;
    if (!img) return;
    munmap(img->base, img->total);
    for (i = 0; i < img->nsyms; i++) free(img->syms[i].name);
    free(img->syms);
    free(img);
}

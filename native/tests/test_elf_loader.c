/* ELF loader tests: objects built by the system compilers with several code models load,
 * relocate and run correctly, or (only objects built -fno-pic / -mcmodel=large) are refused
 * as not position-independent; hostile objects are rejected cleanly.
 *   test_elf_loader [--undefined OBJ] [--replay CRASH]... KOBJ.o...   (the Makefile passes every build of kobj.c) */
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>

#include "testutil.h"
#include "internal.h"
#include <elf.h>

typedef float (*f_ff)(float);
typedef double (*f_dd)(double);
typedef int (*f_ii)(int);
typedef int (*f_iii)(int, int);
typedef int (*f_iv)(void);
typedef const char *(*f_sv)(void);
typedef void (*f_fill)(char *, size_t);
typedef void (*f_copy)(void *, const void *);

#define SYM(img, type, name) ((type)sym_fn(img, name))
static void *sym_fn(const pk_elf_image *img, const char *name) {
    void *p = pk_elf_symbol(img, name);
    CHECK_MSG(p != NULL, "symbol %s missing", name);
    return p;
}

static int is_executable(const void *addr) {
    /* read /proc/self/maps: the page must be r-x and not writable (W^X) */
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    uintptr_t a = (uintptr_t)addr;
    int ok = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
            ok = perms[0] == 'r' && perms[1] == '-' && perms[2] == 'x';
            break;
        }
    }
    fclose(f);
    return ok;
}

/* Built -fno-pic or -mcmodel=large: absolute 32-bit relocations (x86-64) or 8-byte ones in
 * code are refused, as by the Python loader (a damaged relocation type could not be told apart). */
static int may_be_refused(const char *path, const char *msg) {
    return (strstr(path, "nopic") || strstr(path, "large") || strstr(path, "O0")) &&
           (strstr(msg, "build position-independent") || strstr(msg, "large code model"));
}

static int run_kobj(const char *path) {
    size_t n;
    uint8_t *obj = t_read_file(path, &n);
    pk_error e;
    pk_elf_image *img;
    CHECK_MSG(obj != NULL, "cannot read %s", path);
    if (!obj) return 0;
    img = pk_elf_load(obj, n, &e);
    free(obj);   /* the image must not depend on the input bytes */
    if (!img && may_be_refused(path, e.message)) {
        printf("  refused %s as expected: %s\n", path, e.message);
        return 0;
    }
    CHECK_MSG(img != NULL, "%s: %s", path, e.message);
    if (!img) return 0;
    {
        float fx = SYM(img, f_ff, "t_sqrt_exp")(16.0f);
        double dx = SYM(img, f_dd, "t_pow_sin")(4.0);
        char buf[64], bigsrc[512], bigdst[512];
        int i, ok = 1;
        CHECK_MSG(fabsf(fx - (4.0f + expf(1.6f))) < 1e-5f, "%s: t_sqrt_exp %g", path, fx);
        CHECK_MSG(fabs(dx - (8.0 + sin(4.0))) < 1e-12, "%s: t_pow_sin %g", path, dx);
        for (i = 0; i < 9; i++) ok &= SYM(img, f_ii, "t_switch")(i) == 10 + 11 * i;
        CHECK_MSG(ok && SYM(img, f_ii, "t_switch")(9) == -1, "%s: jump table", path);
        CHECK(SYM(img, f_iv, "t_counter")() == 1 && SYM(img, f_iv, "t_counter")() == 2);
        CHECK(SYM(img, f_ii, "t_table")(5) == 9 && SYM(img, f_ii, "t_table")(7) == 6);
        CHECK(SYM(img, f_iii, "t_fnptr")(0, 5) == 6 && SYM(img, f_iii, "t_fnptr")(1, 5) == 10 &&
              SYM(img, f_iii, "t_fnptr")(2, 5) == -5);
        CHECK(strcmp(SYM(img, f_sv, "t_str")(), "hello from an ELF object") == 0);
        CHECK(SYM(img, f_iv, "t_weak")() == 0);
        CHECK(SYM(img, f_iv, "t_data_inc")() == 44 && SYM(img, f_iv, "t_data_inc")() == 47);
        SYM(img, f_fill, "t_fill")(buf, sizeof buf);
        ok = 1;
        for (i = 0; i < 64; i++) ok &= buf[i] == 7;
        CHECK(ok);
        for (i = 0; i < 512; i++) bigsrc[i] = (char)i;
        SYM(img, f_copy, "t_copy")(bigdst, bigsrc);
        CHECK(memcmp(bigsrc, bigdst, 512) == 0);
        CHECK_MSG(is_executable(pk_elf_symbol(img, "t_switch")) == 1, "%s: text is not r-x", path);
        CHECK(pk_elf_symbol(img, "add1") == NULL);   /* local symbols are not exported */
    }
    pk_elf_free(img);
    printf("  loaded and ran %s\n", path);
    return 1;
}

static void write16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void hostile(const char *path) {
    size_t n, i;
    uint8_t *obj = t_read_file(path, &n), *copy;
    pk_error e;
    pk_elf_image *img;
    uint32_t rng = 12345;
    int loaded = 0;
    if (!obj) return;
    copy = (uint8_t *)malloc(n);
    /* foreign machine */
    memcpy(copy, obj, n);
#if defined(__x86_64__)
    write16(copy + 18, 183);
    img = pk_elf_load(copy, n, &e);
    CHECK_MSG(img == NULL && strstr(e.message, "is for aarch64") && strstr(e.message, "host is x86_64"),
              "%s", img ? "loaded" : e.message);
#else
    write16(copy + 18, 62);
    img = pk_elf_load(copy, n, &e);
    CHECK_MSG(img == NULL && strstr(e.message, "is for x86_64"), "%s", img ? "loaded" : e.message);
#endif
    pk_elf_free(img);
    /* not relocatable */
    memcpy(copy, obj, n);
    write16(copy + 16, 2);
    img = pk_elf_load(copy, n, &e);
    CHECK(img == NULL && strstr(e.message, "not a relocatable object"));
    pk_elf_free(img);
    /* not ELF at all */
    img = pk_elf_load((const uint8_t *)"hello", 5, &e);
    CHECK(img == NULL && strstr(e.message, "not an ELF file"));
    /* fuzz regression: an SHT_NULL section flagged SHF_ALLOC with a size past the end */
    memcpy(copy, obj, n);
    {
        Elf64_Ehdr eh;
        Elf64_Shdr sh;
        memcpy(&eh, copy, sizeof eh);
        memcpy(&sh, copy + eh.e_shoff + sizeof sh, sizeof sh);
        sh.sh_type = SHT_NULL;
        sh.sh_flags |= SHF_ALLOC;
        sh.sh_size = 0x1c0003;
        memcpy(copy + eh.e_shoff + sizeof sh, &sh, sizeof sh);
        img = pk_elf_load(copy, n, &e);
        pk_elf_free(img);
        /* and a PROGBITS one: must be refused as out of bounds */
        sh.sh_type = SHT_PROGBITS;
        memcpy(copy + eh.e_shoff + sizeof sh, &sh, sizeof sh);
        img = pk_elf_load(copy, n, &e);
        CHECK(img == NULL && strstr(e.message, "out of bounds"));
        pk_elf_free(img);
    }
    /* every truncation */
    for (i = 0; i < n; i += (i < 128 ? 1 : 7)) {
        img = pk_elf_load(obj, i, &e);
        CHECK_MSG(img == NULL, "truncated to %zu bytes but loaded", i);
        pk_elf_free(img);
    }
    /* random corruption of header tables: never crashes (never executed) */
    for (i = 0; i < 3000; i++) {
        size_t k, flips = 1 + i % 4;
        memcpy(copy, obj, n);
        for (k = 0; k < flips; k++) {
            rng = rng * 1103515245u + 12345u;
            copy[(rng >> 8) % n] ^= (uint8_t)(1u << ((rng >> 4) & 7));
        }
        img = pk_elf_load(copy, n, &e);
        if (img) loaded++;
        else CHECK(e.status == PK_ERR_LOAD || e.status == PK_ERR_NOMEM);
        pk_elf_free(img);
    }
    printf("  hostile: %d of 3000 corrupted copies of %s still loaded (not run)\n", loaded, path);
    free(copy);
    free(obj);
}

static void undefined(const char *path) {
    size_t n;
    uint8_t *obj = t_read_file(path, &n);
    pk_error e;
    pk_elf_image *img;
    CHECK(obj != NULL);
    if (!obj) return;
    img = pk_elf_load(obj, n, &e);
    CHECK_MSG(img == NULL && strstr(e.message, "pk_test_no_such_function_anywhere"), "%s",
              img ? "loaded" : e.message);
    pk_elf_free(img);
    free(obj);
}

/* fuzz/regressions: inputs that once crashed the loader; now they must fail cleanly */
static void replay(const char *path) {
    size_t n;
    uint8_t *obj = t_read_file(path, &n);
    pk_error e;
    pk_elf_image *img;
    CHECK_MSG(obj != NULL, "cannot read %s", path);
    if (!obj) return;
    img = pk_elf_load(obj, n, &e);
    CHECK_MSG(img == NULL && e.status == PK_ERR_LOAD, "%s: %s", path, img ? "loaded" : e.message);
    pk_elf_free(img);
    free(obj);
}

int main(int argc, char **argv) {
    int i, nobj = 0;
    const char *last_loaded = NULL;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--undefined") == 0 && i + 1 < argc) undefined(argv[++i]);
        else if (strcmp(argv[i], "--replay") == 0 && i + 1 < argc) replay(argv[++i]);
        else {
            if (run_kobj(argv[i])) last_loaded = argv[i];
            nobj++;
        }
    }
    CHECK_MSG(nobj > 0 && last_loaded, "no objects given, or none loaded");
    if (last_loaded) hostile(last_loaded);
    return t_finish("test_elf_loader");
}

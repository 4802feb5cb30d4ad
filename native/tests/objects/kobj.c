/* A relocatable object that exercises the ELF loader: libm calls, static and global data,
 * rodata tables, jump tables, function-pointer tables, bss, COMMON, weak undefined symbols,
 * string literals and compiler-emitted memset/memcpy. Built with several compilers and code
 * models by the Makefile; tests/test_elf_loader.c loads each build and calls these. */
#include <math.h>
#include <stddef.h>
#include <string.h>

extern int t_weak_missing __attribute__((weak));
int t_common_var;                         /* COMMON with -fcommon */
static int counter;                       /* .bss */
int t_data = 41;                          /* .data */
static const int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};

static int add1(int x) { return x + 1; }
static int twice(int x) { return 2 * x; }
static int negate(int x) { return -x; }
static int (*const fns[3])(int) = {add1, twice, negate};   /* absolute addresses in data */

float t_sqrt_exp(float x) { return sqrtf(x) + expf(x * 0.1f); }
double t_pow_sin(double x) { return pow(x, 1.5) + sin(x); }

int t_switch(int k) {
    switch (k) {   /* dense: a jump table */
    case 0: return 10;
    case 1: return 21;
    case 2: return 32;
    case 3: return 43;
    case 4: return 54;
    case 5: return 65;
    case 6: return 76;
    case 7: return 87;
    case 8: return 98;
    default: return -1;
    }
}

int t_counter(void) { return ++counter; }
int t_table(int i) { return table[i & 7]; }
int t_fnptr(int i, int x) { return fns[i % 3](x); }
const char *t_str(void) { return "hello from an ELF object"; }
int t_weak(void) { return &t_weak_missing != NULL; }
int t_data_inc(void) { t_common_var += 2; return ++t_data + t_common_var; }

struct big { char bytes[512]; };
void t_fill(char *p, size_t n) { memset(p, 7, n); }
void t_copy(struct big *dst, const struct big *src) { *dst = *src; }

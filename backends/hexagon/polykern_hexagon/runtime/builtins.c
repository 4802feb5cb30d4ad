/* polykern Hexagon runtime: the compiler-rt and libm routines a polykern Hexagon object calls.
 *
 * Written for polykern (no code from other projects). Compiled freestanding with clang
 * (--target=hexagon-unknown-elf -ffreestanding -fno-builtin) by runtime/toolchain.py, so nothing
 * here may itself call a library routine: integer division is shift-and-subtract; f64 add,
 * subtract and multiply (hexagonv65/v66 have no instructions for them), division and square root
 * work on the significands in integers (long division, digit-by-digit roots), rounded once (to
 * nearest, ties to even). The f64 operators used elsewhere in this file are the V67 harness's
 * instructions. f64 fma is Dekker's exact product plus Boldo and Melquiond's
 * round-to-odd sum, with power-of-two scaling around it; it is correctly rounded except when the
 * result is subnormal (then it may be off by one ulp of the subnormal). Everything else is exact.
 */
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long usize;

#define SIGN64 0x8000000000000000ull
#define FRAC64 0x000fffffffffffffull
#define IMPL64 0x0010000000000000ull
#define QNAN64 0x0008000000000000ull

/* ------------------------------------------------------------------ memory */

void *memcpy(void *dst, const void *src, usize n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, usize n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, usize n) {
  unsigned char *d = dst;
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

void *pk_rt_memcpy_likely_aligned_min32bytes_mult8bytes(void *dst, const void *src, usize n) {
  return memcpy(dst, src, n);
}

/* ------------------------------------------------------------------ integer division */

static u32 udivmod32(u32 n, u32 d, u32 *rem) {
  u32 q = 0;
  int s;
  if (d == 0) { /* kernels never divide by 0 (the codegen divides by 1 instead) */
    *rem = n;
    return 0xffffffffu;
  }
  if (n < d) {
    *rem = n;
    return 0;
  }
  s = __builtin_clz(d) - __builtin_clz(n);
  d <<= s;
  for (; s >= 0; s--) {
    q <<= 1;
    if (n >= d) {
      n -= d;
      q |= 1;
    }
    d >>= 1;
  }
  *rem = n;
  return q;
}

static u64 udivmod64(u64 n, u64 d, u64 *rem) {
  u64 q = 0;
  int s;
  if (d == 0) {
    *rem = n;
    return ~0ull;
  }
  if (n < d) {
    *rem = n;
    return 0;
  }
  s = __builtin_clzll(d) - __builtin_clzll(n);
  d <<= s;
  for (; s >= 0; s--) {
    q <<= 1;
    if (n >= d) {
      n -= d;
      q |= 1;
    }
    d >>= 1;
  }
  *rem = n;
  return q;
}

u32 pk_rt_udivsi3(u32 a, u32 b) { u32 r; return udivmod32(a, b, &r); }
u32 pk_rt_umodsi3(u32 a, u32 b) { u32 r; udivmod32(a, b, &r); return r; }
u64 pk_rt_udivdi3(u64 a, u64 b) { u64 r; return udivmod64(a, b, &r); }
u64 pk_rt_umoddi3(u64 a, u64 b) { u64 r; udivmod64(a, b, &r); return r; }

/* Signed: divide magnitudes (computed unsigned, so INT_MIN is fine); the quotient is negative
 * when the signs differ, the remainder takes the dividend's sign (C semantics). */
i32 pk_rt_divsi3(i32 a, i32 b) {
  u32 r, q = udivmod32(a < 0 ? 0u - (u32)a : (u32)a, b < 0 ? 0u - (u32)b : (u32)b, &r);
  return (i32)((a < 0) != (b < 0) ? 0u - q : q);
}
i32 pk_rt_modsi3(i32 a, i32 b) {
  u32 r;
  udivmod32(a < 0 ? 0u - (u32)a : (u32)a, b < 0 ? 0u - (u32)b : (u32)b, &r);
  return (i32)(a < 0 ? 0u - r : r);
}
i64 pk_rt_divdi3(i64 a, i64 b) {
  u64 r, q = udivmod64(a < 0 ? 0ull - (u64)a : (u64)a, b < 0 ? 0ull - (u64)b : (u64)b, &r);
  return (i64)((a < 0) != (b < 0) ? 0ull - q : q);
}
i64 pk_rt_moddi3(i64 a, i64 b) {
  u64 r;
  udivmod64(a < 0 ? 0ull - (u64)a : (u64)a, b < 0 ? 0ull - (u64)b : (u64)b, &r);
  return (i64)(a < 0 ? 0ull - r : r);
}

/* ------------------------------------------------------------------ f64 helpers */

static u64 bits_of(double x) {
  union { double d; u64 u; } v;
  v.d = x;
  return v.u;
}

static double from_bits(u64 u) {
  union { double d; u64 u; } v;
  v.u = u;
  return v.d;
}

static u32 fbits_of(float x) {
  union { float f; u32 u; } v;
  v.f = x;
  return v.u;
}

static float ffrom_bits(u32 u) {
  union { float f; u32 u; } v;
  v.u = u;
  return v.f;
}

static int is_nan(double x) { return (bits_of(x) & ~SIGN64) > 0x7ff0000000000000ull; }
static double quiet(double x) { return from_bits(bits_of(x) | QNAN64); }
static double default_nan(void) { return from_bits(0x7ff8000000000000ull); }

/* Unpack a finite nonzero |x| as m * 2**(e - 1075) with m in [2**52, 2**53). */
static u64 unpack(u64 u, int *e) {
  int ex = (int)((u >> 52) & 0x7ff);
  u64 m = u & FRAC64;
  if (ex == 0) {
    int sh = __builtin_clzll(m) - 11;
    m <<= sh;
    *e = 1 - sh;
  } else {
    m |= IMPL64;
    *e = ex;
  }
  return m;
}

/* sign | the nearest double (ties to even) to m * 2**(e - 1023 - 55), where m in [2**55, 2**56)
 * (53 significant bits and 3 more) and ``sticky`` says whether anything nonzero lies below m. */
static double round_pack(u64 sign, int e, u64 m, int sticky) {
  u64 low, out;
  if (e >= 0x7ff) return from_bits(sign | 0x7ff0000000000000ull);
  if (e <= 0) { /* subnormal: align to exponent 1, keeping what falls off as sticky */
    int sh = 1 - e;
    if (sh > 56) {
      sticky |= m != 0;
      m = 0;
    } else {
      sticky |= (m & ((1ull << sh) - 1)) != 0;
      m >>= sh;
    }
    e = 1;
  }
  low = m & 7;
  m >>= 3;
  if ((low & 4) && ((low & 3) || sticky || (m & 1))) m++;
  /* the implicit bit adds one to the exponent field; a carry out of the significand does too */
  out = ((u64)(e - 1) << 52) + m;
  return from_bits(sign | out);
}

/* ------------------------------------------------------------------ f64 division */

double pk_rt_divdf3(double a, double b) {
  u64 ua = bits_of(a), ub = bits_of(b), sign = (ua ^ ub) & SIGN64, ma, mb, q = 0;
  int ea, eb, i;
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  if ((ua & ~SIGN64) == 0x7ff0000000000000ull) {
    if ((ub & ~SIGN64) == 0x7ff0000000000000ull) return default_nan();
    return from_bits(sign | 0x7ff0000000000000ull);
  }
  if ((ub & ~SIGN64) == 0x7ff0000000000000ull) return from_bits(sign);
  if ((ub & ~SIGN64) == 0) {
    if ((ua & ~SIGN64) == 0) return default_nan();
    return from_bits(sign | 0x7ff0000000000000ull);
  }
  if ((ua & ~SIGN64) == 0) return from_bits(sign);
  ma = unpack(ua, &ea);
  mb = unpack(ub, &eb);
  ea = ea - eb + 1023;
  if (ma < mb) {
    ma <<= 1;
    ea -= 1;
  }
  /* ma / mb in [1, 2): 56 quotient bits by restoring division */
  for (i = 0; i < 56; i++) {
    q <<= 1;
    if (ma >= mb) {
      ma -= mb;
      q |= 1;
    }
    ma <<= 1;
  }
  return round_pack(sign, ea, q, ma != 0);
}

/* ------------------------------------------------------------------ f64 add, subtract, multiply
 * hexagonv65/v66 have no double-precision add or multiply instructions: LLVM calls these. */

static double add_special(u64 ua, u64 ub) { /* a NaN or infinity among the operands */
  double a = from_bits(ua), b = from_bits(ub);
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  if ((ua & ~SIGN64) == 0x7ff0000000000000ull) {
    if ((ub & ~SIGN64) == 0x7ff0000000000000ull && (ua ^ ub) == SIGN64) return default_nan(); /* inf - inf */
    return a;
  }
  return b;
}

double pk_rt_adddf3(double a, double b) {
  u64 ua = bits_of(a), ub = bits_of(b), ma, mb, sa, sb, m, sign;
  int ea, eb, d;
  if ((ua & ~SIGN64) >= 0x7ff0000000000000ull || (ub & ~SIGN64) >= 0x7ff0000000000000ull)
    return add_special(ua, ub);
  if ((ua & ~SIGN64) == 0) return (ub & ~SIGN64) == 0 ? from_bits(ua & ub) : b; /* -0 + -0 = -0 */
  if ((ub & ~SIGN64) == 0) return a;
  if ((ua & ~SIGN64) < (ub & ~SIGN64)) { /* |a| >= |b| from here on */
    u64 t = ua;
    ua = ub;
    ub = t;
  }
  sa = ua & SIGN64;
  sb = ub & SIGN64;
  /* six extra bits (leading bit at 58): after aligning b, what falls off is folded into bit 0, and
   * a cancellation shifts left by at most one place then, so that bit stays below the three
   * guard bits round_pack reads */
  ma = unpack(ua, &ea) << 6;
  mb = unpack(ub, &eb) << 6;
  d = ea - eb;
  if (d > 0) {
    if (d > 61) {
      mb = 1;
    } else {
      u64 lost = mb & ((1ull << d) - 1);
      mb = (mb >> d) | (lost != 0);
    }
  }
  sign = sa;
  if (sa == sb) {
    m = ma + mb;
    if (m >> 59) {
      m = (m >> 1) | (m & 1);
      ea++;
    }
  } else {
    m = ma - mb;
    if (m == 0) return from_bits(0); /* x - x = +0 when rounding to nearest */
    while (!(m >> 58)) {
      m <<= 1;
      ea--;
    }
  }
  return round_pack(sign, ea, m >> 3, (m & 7) != 0);
}

double pk_rt_subdf3(double a, double b) { return pk_rt_adddf3(a, from_bits(bits_of(b) ^ SIGN64)); }

double pk_rt_muldf3(double a, double b) {
  u64 ua = bits_of(a), ub = bits_of(b), sign = (ua ^ ub) & SIGN64, ma, mb, al, ah, bl, bh, lo, mid1, mid2, hi, m;
  int ea, eb, e, sticky;
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  if ((ua & ~SIGN64) == 0x7ff0000000000000ull || (ub & ~SIGN64) == 0x7ff0000000000000ull) {
    if ((ua & ~SIGN64) == 0 || (ub & ~SIGN64) == 0) return default_nan(); /* inf * 0 */
    return from_bits(sign | 0x7ff0000000000000ull);
  }
  if ((ua & ~SIGN64) == 0 || (ub & ~SIGN64) == 0) return from_bits(sign);
  ma = unpack(ua, &ea);
  mb = unpack(ub, &eb);
  /* the 106-bit product hi:lo of two 53-bit significands, from 32-bit halves */
  al = ma & 0xffffffffull;
  ah = ma >> 32;
  bl = mb & 0xffffffffull;
  bh = mb >> 32;
  lo = al * bl;
  mid1 = al * bh;
  mid2 = ah * bl;
  hi = ah * bh;
  {
    u64 mid = (lo >> 32) + (mid1 & 0xffffffffull) + (mid2 & 0xffffffffull);
    lo = (lo & 0xffffffffull) | (mid << 32);
    hi += (mid1 >> 32) + (mid2 >> 32) + (mid >> 32);
  }
  /* product in [2**104, 2**106): keep 56 bits (leading bit at 55), the rest is sticky */
  e = ea + eb - 1023;
  if (hi >> 41) { /* >= 2**105 */
    m = (hi << 14) | (lo >> 50);
    sticky = (lo & ((1ull << 50) - 1)) != 0;
    e++;
  } else {
    m = (hi << 15) | (lo >> 49);
    sticky = (lo & ((1ull << 49) - 1)) != 0;
  }
  return round_pack(sign, e, m, sticky);
}

/* ------------------------------------------------------------------ square root */

double sqrt(double x) {
  u64 u = bits_of(x), m, q = 0, r = 0;
  int e, i;
  if (is_nan(x)) return quiet(x);
  if ((u & ~SIGN64) == 0) return x; /* +-0 */
  if (u & SIGN64) return default_nan();
  if (u == 0x7ff0000000000000ull) return x;
  m = unpack(u, &e); /* x = m * 2**(e - 1075) */
  e -= 1023;         /* x = (m / 2**52) * 2**e */
  if (e & 1) {
    m <<= 1;
    e -= 1;
  }
  /* q = floor(sqrt(m * 2**58)) in [2**55, 2**56), two radicand bits per step */
  for (i = 55; i >= 0; i--) {
    u64 t;
    r = (r << 2) | (2 * i >= 58 ? (m >> (2 * i - 58)) & 3 : 0);
    t = (q << 2) | 1;
    q <<= 1;
    if (r >= t) {
      r -= t;
      q |= 1;
    }
  }
  return round_pack(0, e / 2 + 1023, q, r != 0);
}

/* sqrt of a float through f64 is correctly rounded: 53 >= 2 * 24 + 2 */
float pk_rt_sqrtf(float x) { return (float)sqrt((double)x); }
float sqrtf(float x) { return (float)sqrt((double)x); }
double pk_rt_sqrtdf2(double x) { return sqrt(x); }

/* ------------------------------------------------------------------ rounding, min, max */

double rint(double x) {
  u64 u = bits_of(x);
  double big;
  if ((u & ~SIGN64) >= 0x4330000000000000ull) return x; /* |x| >= 2**52, inf, nan */
  big = from_bits((u & SIGN64) | 0x4330000000000000ull);
  x = (x + big) - big;
  return from_bits(bits_of(x) | (u & SIGN64)); /* keep the sign of zero results */
}

float rintf(float x) {
  u32 u = fbits_of(x);
  float big;
  if ((u & 0x7fffffffu) >= 0x4b000000u) return x; /* |x| >= 2**23, inf, nan */
  big = ffrom_bits((u & 0x80000000u) | 0x4b000000u);
  x = (x + big) - big;
  return ffrom_bits(fbits_of(x) | (u & 0x80000000u));
}

double nearbyint(double x) { return rint(x); }
float nearbyintf(float x) { return rintf(x); }
double floor(double x) { double r = rint(x); return r > x ? r - 1.0 : r; }
float floorf(float x) { float r = rintf(x); return r > x ? r - 1.0f : r; }
double ceil(double x) {
  double r = rint(x);
  if (r < x) r = r + 1.0;
  return from_bits(bits_of(r) | (bits_of(x) & SIGN64)); /* ceil(-0.5) is -0 */
}
float ceilf(float x) {
  float r = rintf(x);
  if (r < x) r = r + 1.0f;
  return ffrom_bits(fbits_of(r) | (fbits_of(x) & 0x80000000u));
}
double trunc(double x) { return x < 0 ? ceil(x) : floor(x); }
float truncf(float x) { return x < 0 ? ceilf(x) : floorf(x); }
double fabs(double x) { return from_bits(bits_of(x) & ~SIGN64); }
float fabsf(float x) { return ffrom_bits(fbits_of(x) & 0x7fffffffu); }

/* IEEE minNum/maxNum: a NaN operand loses; -0 < +0 */
double fmin(double a, double b) {
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  if (a == b) return (bits_of(a) & SIGN64) ? a : b;
  return a < b ? a : b;
}
double fmax(double a, double b) {
  if (is_nan(a)) return b;
  if (is_nan(b)) return a;
  if (a == b) return (bits_of(a) & SIGN64) ? b : a;
  return a > b ? a : b;
}
float fminf(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return (fbits_of(a) & 0x80000000u) ? a : b;
  return a < b ? a : b;
}
float fmaxf(float a, float b) {
  if (a != a) return b;
  if (b != b) return a;
  if (a == b) return (fbits_of(a) & 0x80000000u) ? b : a;
  return a > b ? a : b;
}

/* ------------------------------------------------------------------ fmod (exact) */

double fmod(double x, double y) {
  u64 ux = bits_of(x), uy = bits_of(y), sx = ux & SIGN64, mx, my;
  int ex, ey;
  if (is_nan(x) || is_nan(y)) return default_nan();
  if ((ux & ~SIGN64) == 0x7ff0000000000000ull || (uy & ~SIGN64) == 0) return default_nan();
  if ((uy & ~SIGN64) == 0x7ff0000000000000ull || (ux & ~SIGN64) < (uy & ~SIGN64)) return x;
  if ((ux & ~SIGN64) == 0) return x;
  mx = unpack(ux, &ex);
  my = unpack(uy, &ey);
  for (; ex > ey; ex--) { /* mx * 2**(ex-ey) mod my, one exponent step at a time */
    if (mx >= my) mx -= my;
    mx <<= 1;
  }
  if (mx >= my) mx -= my;
  if (mx == 0) return from_bits(sx);
  while (mx < IMPL64) {
    mx <<= 1;
    ex--;
  }
  return round_pack(sx, ex, mx << 3, 0); /* exact: the remainder is representable */
}

float fmodf(float x, float y) { return (float)fmod((double)x, (double)y); }

/* ------------------------------------------------------------------ fma */

static double pow2(int k) { /* 2**k for -1022 <= k <= 1023 */
  return from_bits((u64)(k + 1023) << 52);
}

static double scale(double x, int k) { /* x * 2**k in steps that stay in the normal range */
  while (k > 1000) {
    x *= pow2(1000);
    k -= 1000;
  }
  while (k < -1000) {
    x *= pow2(-1000);
    k += 1000;
  }
  return x * pow2(k);
}

static int exponent_of(double x) { /* unbiased exponent of a finite nonzero x */
  int e;
  unpack(bits_of(x), &e);
  return e - 1023;
}

static void two_sum(double a, double b, double *s, double *err) {
  double z, bb;
  z = a + b;
  bb = z - a;
  *s = z;
  *err = (a - (z - bb)) + (b - bb);
}

static void two_prod(double a, double b, double *p, double *err) {
  const double split = 134217729.0; /* 2**27 + 1 (Veltkamp) */
  double ca = split * a, cb = split * b, ah, al, bh, bl, z;
  ah = ca - (ca - a);
  al = a - ah;
  bh = cb - (cb - b);
  bl = b - bh;
  z = a * b;
  *p = z;
  *err = ((ah * bh - z) + ah * bl + al * bh) + al * bl;
}

static double add_round_odd(double a, double b) {
  double s, err;
  two_sum(a, b, &s, &err);
  if (err != 0 && !(bits_of(s) & 1)) { /* inexact and even: step to the odd neighbour toward err */
    u64 u = bits_of(s);
    s = from_bits((err > 0) == (s > 0) ? u + 1 : u - 1);
  }
  return s;
}

double fma(double a, double b, double c) {
  double ph, pl, th, tl, v, r;
  int ka, kb, k;
  if (is_nan(a) || is_nan(b) || is_nan(c) || a == 0 || b == 0 || c != c ||
      (bits_of(a) & ~SIGN64) == 0x7ff0000000000000ull || (bits_of(b) & ~SIGN64) == 0x7ff0000000000000ull ||
      (bits_of(c) & ~SIGN64) == 0x7ff0000000000000ull)
    return a * b + c; /* the IEEE special cases come out right unfused */
  /* Scale a and b to [1, 2) so the exact product neither overflows nor underflows. */
  ka = exponent_of(a);
  kb = exponent_of(b);
  k = ka + kb;
  a = scale(a, -ka);
  b = scale(b, -kb);
  if (c != 0) {
    int kc = exponent_of(c);
    if (kc - k > 110) return c; /* |a*b| < 2**(k+2) is below half an ulp of c */
    if (kc - k < -1200) c = 0; /* c is below half an ulp of any product */
    else c = scale(c, -k);
  }
  if (c == 0) return scale(a * b, k);
  two_prod(a, b, &ph, &pl);
  two_sum(c, ph, &th, &tl);
  v = add_round_odd(tl, pl);
  r = th + v;
  return scale(r, k);
}

/* The product of two floats is exact in f64; the sum rounded to odd in f64 then to f32 is
 * correctly rounded (53 >= 24 + 2), with no double rounding. */
float fmaf(float a, float b, float c) {
  double p = (double)a * (double)b, cd = c;
  if (p != p || cd != cd || p == 0 || cd == 0 || (bits_of(p) & ~SIGN64) == 0x7ff0000000000000ull ||
      (bits_of(cd) & ~SIGN64) == 0x7ff0000000000000ull)
    return (float)(p + cd);
  return (float)add_round_odd(p, cd);
}

/* ------------------------------------------------------------------ the __hexagon_* entry points
 *
 * LLVM's Hexagon backend assumes its runtime routines (__hexagon_divsi3, __hexagon_udivdi3, ...)
 * keep every register but the result (it leaves live values in r2..r15 across the call; seen with
 * a 64-bit division in the workgroup loop). The C routines above follow the ordinary ABI, so each
 * entry point saves r2..r15, r28 and the predicates around the call. */
#define PK_PRESERVE_ALL(name, impl)                                                        \
  __asm__(".text\n\t.globl " #name "\n\t.type " #name ",@function\n\t.p2align 4\n" #name ":\n" \
          "\t{ allocframe(#72) }\n"                                                        \
          "\t{ memd(r29+#0) = r3:2 }\n\t{ memd(r29+#8) = r5:4 }\n"                         \
          "\t{ memd(r29+#16) = r7:6 }\n\t{ memd(r29+#24) = r9:8 }\n"                       \
          "\t{ memd(r29+#32) = r11:10 }\n\t{ memd(r29+#40) = r13:12 }\n"                   \
          "\t{ memd(r29+#48) = r15:14 }\n\t{ r14 = p3:0 }\n"                               \
          "\t{ memw(r29+#56) = r14 }\n\t{ memw(r29+#60) = r28 }\n"                         \
          "\t{ call " #impl " }\n"                                                         \
          "\t{ r14 = memw(r29+#56) }\n\t{ p3:0 = r14 }\n\t{ r28 = memw(r29+#60) }\n"      \
          "\t{ r3:2 = memd(r29+#0) }\n\t{ r5:4 = memd(r29+#8) }\n"                         \
          "\t{ r7:6 = memd(r29+#16) }\n\t{ r9:8 = memd(r29+#24) }\n"                       \
          "\t{ r11:10 = memd(r29+#32) }\n\t{ r13:12 = memd(r29+#40) }\n"                   \
          "\t{ r15:14 = memd(r29+#48) }\n"                                                 \
          "\t{ dealloc_return }\n\t.size " #name ", .-" #name "\n")

PK_PRESERVE_ALL(__hexagon_adddf3, pk_rt_adddf3);
PK_PRESERVE_ALL(__hexagon_subdf3, pk_rt_subdf3);
PK_PRESERVE_ALL(__hexagon_muldf3, pk_rt_muldf3);
PK_PRESERVE_ALL(__hexagon_divdf3, pk_rt_divdf3);
PK_PRESERVE_ALL(__hexagon_divdi3, pk_rt_divdi3);
PK_PRESERVE_ALL(__hexagon_divsi3, pk_rt_divsi3);
PK_PRESERVE_ALL(__hexagon_memcpy_likely_aligned_min32bytes_mult8bytes, pk_rt_memcpy_likely_aligned_min32bytes_mult8bytes);
PK_PRESERVE_ALL(__hexagon_moddi3, pk_rt_moddi3);
PK_PRESERVE_ALL(__hexagon_modsi3, pk_rt_modsi3);
PK_PRESERVE_ALL(__hexagon_sqrtdf2, pk_rt_sqrtdf2);
PK_PRESERVE_ALL(__hexagon_sqrtf, pk_rt_sqrtf);
PK_PRESERVE_ALL(__hexagon_udivdi3, pk_rt_udivdi3);
PK_PRESERVE_ALL(__hexagon_udivsi3, pk_rt_udivsi3);
PK_PRESERVE_ALL(__hexagon_umoddi3, pk_rt_umoddi3);
PK_PRESERVE_ALL(__hexagon_umodsi3, pk_rt_umodsi3);

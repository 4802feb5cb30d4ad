/* Test entry for test_hexagon_runtime.py: applies one runtime routine (chosen by ``op``) to
 * arrays, so the Hexagon builtins can be compared with Python. Linked like a kernel: the harness
 * calls pk_entry(args, launch, 0, groups) with args = (op: i32, n: i32, a, b, c, out: u64 buffers). */
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef int i32;

double sqrt(double);
float sqrtf(float);
double fma(double, double, double);
float fmaf(float, float, float);
double rint(double);
double floor(double);
double ceil(double);
double fmin(double, double);
double fmax(double, double);
double fmod(double, double);
/* hexagonv65/v66 call these for f64 + - * (v67 and later have instructions): called directly here */
double __hexagon_adddf3(double, double);
double __hexagon_subdf3(double, double);
double __hexagon_muldf3(double, double);

static double d(u64 u) { union { double d; u64 u; } v; v.u = u; return v.d; }
static u64 u(double x) { union { double d; u64 u; } v; v.d = x; return v.u; }
static float f(u64 x) { union { float f; u32 u; } v; v.u = (u32)x; return v.f; }
static u64 uf(float x) { union { float f; u32 u; } v; v.f = x; return v.u; }

void pk_entry(void **args, const i32 *launch, i64 begin, i64 end) {
  i32 op = *(i32 *)args[0], n = *(i32 *)args[1], i;
  u64 *a = *(u64 **)args[2], *b = *(u64 **)args[3], *c = *(u64 **)args[4], *o = *(u64 **)args[5];
  for (i = 0; i < n; i++) {
    u64 x = a[i], y = b[i], z = c[i], r = 0;
    switch (op) {
      case 0: r = x / y; break;
      case 1: r = x % y; break;
      case 2: r = (u64)((i64)x / (i64)y); break;
      case 3: r = (u64)((i64)x % (i64)y); break;
      case 4: r = (u32)x / (u32)y; break;
      case 5: r = (u32)x % (u32)y; break;
      case 6: r = (u32)((i32)x / (i32)y); break;
      case 7: r = (u32)((i32)x % (i32)y); break;
      case 8: r = u(d(x) / d(y)); break;
      case 9: r = u(sqrt(d(x))); break;
      case 10: r = u(fma(d(x), d(y), d(z))); break;
      case 11: r = u(rint(d(x))); break;
      case 12: r = u(floor(d(x))); break;
      case 13: r = u(ceil(d(x))); break;
      case 14: r = u(fmin(d(x), d(y))); break;
      case 15: r = u(fmax(d(x), d(y))); break;
      case 16: r = u(fmod(d(x), d(y))); break;
      case 17: r = uf(sqrtf(f(x))); break;
      case 18: r = uf(fmaf(f(x), f(y), f(z))); break;
      case 19: r = u(__hexagon_adddf3(d(x), d(y))); break;
      case 20: r = u(__hexagon_subdf3(d(x), d(y))); break;
      case 21: r = u(__hexagon_muldf3(d(x), d(y))); break;
      default: r = 0xdeadbeefull;
    }
    o[i] = r;
  }
}

/* polykern Hexagon runtime: the freestanding launcher linked with a module's object.
 *
 * Written for polykern. No libc: Linux system calls through trap0(#1) (number in r6, arguments
 * in r0..r5), as qemu-hexagon's user-mode emulation implements them. The link defines
 * ``pk_entry`` as the kernel's ``K__range`` symbol (ld.lld --defsym), so one executable runs
 * one kernel; the launch comes on stdin and the written buffers go back on stdout.
 *
 * stdin (little-endian):  header  u32 magic "PKHX", u32 nargs, u64 body bytes, i32 launch[6]
 *                         body    per argument a 64-byte record head (u32 kind, u32 0,
 *                                 u64 nbytes, zeros) then nbytes of data padded to 64 bytes;
 *                                 kind 0 = scalar, 1 = read-only buffer, 2 = written buffer
 * stdout:                 the data of every kind-2 argument in order, then u32 "PKOK".
 * Exit status 0 after a complete run; 3 with a message on stderr when the input is malformed.
 * The same stream as native/tools/kbin_run.c; python/polykern/runtime/launch_stream.py is its Python side
 * (test_hexagon_runtime.py checks that the constants agree).
 */
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long usize;

#define PK_MAGIC 0x58484b50u /* "PKHX" */
#define PK_DONE 0x4b4f4b50u  /* "PKOK" */
#define PK_RECORD 64u
#define PK_MAX_ARGS 1024u

#define SYS_READ 63
#define SYS_WRITE 64
#define SYS_EXIT_GROUP 94
#define SYS_MMAP2 222

extern void pk_entry(void **args, const i32 *launch, i64 group_begin, i64 group_end);

static long syscall6(long n, long a, long b, long c, long d, long e, long f) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  register long r4 __asm__("r4") = e;
  register long r5 __asm__("r5") = f;
  register long r6 __asm__("r6") = n;
  __asm__ volatile("trap0(#1)"
                   : "+r"(r0)
                   : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6)
                   : "memory");
  return r0;
}

static __attribute__((noreturn)) void die(int code) {
  for (;;) syscall6(SYS_EXIT_GROUP, code, 0, 0, 0, 0, 0);
}

static usize cstrlen(const char *s) {
  usize n = 0;
  while (s[n]) n++;
  return n;
}

static void write_all(int fd, const void *data, u64 n) {
  const char *p = data;
  while (n) {
    long chunk = n > 0x10000000u ? 0x10000000 : (long)n;
    long w = syscall6(SYS_WRITE, fd, (long)p, chunk, 0, 0, 0);
    if (w <= 0) die(4);
    p += w;
    n -= (u64)w;
  }
}

static __attribute__((noreturn)) void fail(const char *msg) {
  static const char prefix[] = "polykern hexagon harness: ";
  write_all(2, prefix, sizeof prefix - 1);
  write_all(2, msg, cstrlen(msg));
  write_all(2, "\n", 1);
  die(3);
}

static void read_all(void *dst, u64 n) {
  char *p = dst;
  while (n) {
    long chunk = n > 0x10000000u ? 0x10000000 : (long)n;
    long r = syscall6(SYS_READ, 0, (long)p, chunk, 0, 0, 0);
    if (r <= 0) fail("stdin ended before the launch was complete");
    p += r;
    n -= (u64)r;
  }
}

static void *map(u64 n) {
  long p;
  if (n == 0) n = 1;
  if (n > 0xc0000000ull) fail("launch data larger than the 32-bit address space");
  /* PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS */
  p = syscall6(SYS_MMAP2, 0, (long)n, 3, 0x22, -1, 0);
  if (p < 0 && p > -4096) fail("out of memory (mmap failed)");
  return (void *)p;
}

struct header {
  u32 magic, nargs;
  u64 body;
  i32 launch[6];
};

struct record {
  u32 kind, zero;
  u64 nbytes;
};

__attribute__((noreturn)) void _start(void) {
  struct header h;
  char *body;
  void **args;
  u32 i, done = PK_DONE;
  u64 off = 0;
  i64 groups;

  read_all(&h, sizeof h);
  if (h.magic != PK_MAGIC) fail("bad magic on stdin (not a polykern launch)");
  if (h.nargs > PK_MAX_ARGS) fail("too many arguments");
  body = map(h.body);
  read_all(body, h.body);
  args = map(sizeof(void *) * (h.nargs ? h.nargs : 1));
  for (i = 0; i < h.nargs; i++) {
    struct record *r;
    u64 padded;
    if (h.body - off < PK_RECORD) fail("argument record past the end of the body");
    r = (struct record *)(body + off);
    if (r->kind > 2) fail("bad argument kind");
    padded = (r->nbytes + PK_RECORD - 1) / PK_RECORD * PK_RECORD;
    if (r->nbytes > h.body || h.body - off - PK_RECORD < padded) fail("argument data past the end of the body");
    if (r->kind == 0) {
      args[i] = body + off + PK_RECORD; /* args[i] points at the scalar's bytes */
    } else {
      /* args[i] points at a cell holding the buffer's data pointer: the head's spare bytes */
      void **cell = (void **)(body + off + 16);
      *cell = body + off + PK_RECORD;
      args[i] = cell;
    }
    off += PK_RECORD + padded;
  }
  for (i = 0; i < 6; i++)
    if (h.launch[i] <= 0) fail("grid and block sizes must be positive");
  groups = (i64)h.launch[0] * h.launch[1] * h.launch[2];
  pk_entry(args, h.launch, 0, groups);
  off = 0;
  for (i = 0; i < h.nargs; i++) {
    struct record *r = (struct record *)(body + off);
    if (r->kind == 2) write_all(1, body + off + PK_RECORD, r->nbytes);
    off += PK_RECORD + (r->nbytes + PK_RECORD - 1) / PK_RECORD * PK_RECORD;
  }
  write_all(1, &done, sizeof done);
  die(0);
}

/* A CPU kernel written by hand against the payload ABI (docs/internals.md "CPU (llvm)
 * payload"), so the C runtime can be tested without the Python compiler:
 *   void K__range(void **args, const int32_t *launch, int64_t group_begin, int64_t group_end)
 * args[i] points at the value of argument i; for a buffer that value is its data pointer. */
#include <math.h>
#include <stdint.h>

void saxpy__range(void **args, const int32_t *launch, int64_t begin, int64_t end) {
    int32_t n = *(const int32_t *)args[0];
    float a = *(const float *)args[1];
    const float *x = *(float *const *)args[2];
    float *y = *(float **)args[3];
    int64_t bx = launch[3], g, l;
    for (g = begin; g < end; g++)
        for (l = 0; l < bx; l++) {
            int64_t i = g * bx + l;   /* 1-D launch: group g, lane l */
            if (i < n) y[i] = a * x[i] + y[i];
        }
}

/* Records which workgroups ran: hits[g] += 1 for every (x, y, z) group in range. */
void count__range(void **args, const int32_t *launch, int64_t begin, int64_t end) {
    int32_t *hits = *(int32_t **)args[0];
    int64_t g;
    (void)launch;
    for (g = begin; g < end; g++) __atomic_fetch_add(&hits[g], 1, __ATOMIC_RELAXED);
}

/* calls libm through the loader's trampolines */
void vsqrt__range(void **args, const int32_t *launch, int64_t begin, int64_t end) {
    int32_t n = *(const int32_t *)args[0];
    float *y = *(float **)args[1];
    int64_t bx = launch[3], g, l;
    for (g = begin; g < end; g++)
        for (l = 0; l < bx; l++) {
            int64_t i = g * bx + l;
            if (i < n) y[i] = sqrtf(y[i]) + expf(0.0f);
        }
}

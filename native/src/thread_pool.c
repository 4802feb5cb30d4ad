/* The CPU worker pool: workgroups run in parallel on every core, like the Python CPU runtime
 * (backends/llvm/polykern_llvm/runtime/pool.py). A launch splits its workgroups into contiguous
 * chunks (4 per worker) and the workers call `K__range(args, launch, begin, end)` on them.
 * Workers have a large stack (barrier kernels keep per-work-item storage on it), sized by
 * POLYKERN_CPU_STACK_MB (default 64); POLYKERN_CPU_THREADS sets their number (default: online
 * CPUs). Several threads may launch at once: launches queue and share the workers; each
 * caller waits for its own chunks only. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define CHUNKS_PER_WORKER 4

typedef struct pool_job {
    pk_range_fn fn;
    void **args;
    const int32_t *launch;
    int64_t total, chunk, next;
    int64_t chunks, finished;
    struct pool_job *nextjob;
} pool_job;

struct pk_pool {
    int nthreads;
    size_t stack_bytes;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pool_job *head, *tail;   /* jobs with chunks not yet handed out */
    int shutdown;
};

static long env_long(const char *name, long dflt, long lo, long hi) {
    const char *s = getenv(name);
    char *end;
    long v;
    if (!s || !*s) return dflt;
    v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) return dflt;
    return v;
}

int pk_default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return (int)env_long("POLYKERN_CPU_THREADS", n > 1024 ? 1024 : n, 1, 1024);
}

size_t pk_default_stack_bytes(void) {
    return (size_t)env_long("POLYKERN_CPU_STACK_MB", 64, 1, 4096) << 20;
}

static void *worker(void *arg) {
    pk_pool *p = (pk_pool *)arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        pool_job *j;
        int64_t b, e;
        while (!p->shutdown && !p->head) pthread_cond_wait(&p->wake, &p->mu);
        if (!p->head) break;   /* shutdown with nothing queued */
        j = p->head;
        b = j->next;
        e = j->total - b > j->chunk ? b + j->chunk : j->total;
        j->next = e;
        if (e == j->total) {   /* all handed out: dequeue */
            p->head = j->nextjob;
            if (!p->head) p->tail = NULL;
        }
        pthread_mutex_unlock(&p->mu);
        j->fn(j->args, j->launch, b, e);
        pthread_mutex_lock(&p->mu);
        if (++j->finished == j->chunks) pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

pk_pool *pk_pool_create(int nthreads, size_t stack_bytes, pk_error *err) {
    pk_pool *p = (pk_pool *)calloc(1, sizeof *p);
    pthread_attr_t attr;
    int i, rc = 0;
    if (!p) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    if (nthreads < 1) nthreads = pk_default_threads();
    p->stack_bytes = stack_bytes ? stack_bytes : pk_default_stack_bytes();
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->threads = (pthread_t *)calloc((size_t)nthreads, sizeof(pthread_t));
    if (!p->threads) { pk_pool_destroy(p); pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    pthread_attr_init(&attr);
    if (pthread_attr_setstacksize(&attr, p->stack_bytes) != 0) rc = -1;
    for (i = 0; i < nthreads && rc == 0; i++) {
        rc = pthread_create(&p->threads[i], &attr, worker, p);
        if (rc == 0) p->nthreads++;
    }
    pthread_attr_destroy(&attr);
    if (p->nthreads == 0) {
        pk_pool_destroy(p);
        pk_fail(err, PK_ERR_LOAD, "cannot start CPU worker threads with %zu MiB stacks "
                "(POLYKERN_CPU_STACK_MB)", stack_bytes >> 20);
        return NULL;
    }
    return p;
}

int pk_pool_threads(const pk_pool *p) { return p->nthreads; }
size_t pk_pool_stack_bytes(const pk_pool *p) { return p->stack_bytes; }

int pk_pool_run(pk_pool *p, pk_range_fn fn, void **args, const int32_t *launch, int64_t total,
                pk_error *err) {
    pool_job j;
    int64_t pieces = (int64_t)p->nthreads * CHUNKS_PER_WORKER;
    (void)err;
    if (total <= 0) return 0;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.args = args;
    j.launch = launch;
    j.total = total;
    j.chunk = (total + pieces - 1) / pieces;
    j.chunks = (total + j.chunk - 1) / j.chunk;
    pthread_mutex_lock(&p->mu);
    if (p->tail) p->tail->nextjob = &j;
    else p->head = &j;
    p->tail = &j;
    pthread_cond_broadcast(&p->wake);
    while (j.finished < j.chunks) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void pk_pool_destroy(pk_pool *p) {
    int i;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

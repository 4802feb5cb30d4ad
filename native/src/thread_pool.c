/* A pthread pool that runs `K__range(args, launch, begin, end)` over chunks of workgroups.
 * One launch at a time per pool (pk_pool_run holds the pool's run lock); the calling thread
 * works too, so a pool of N threads runs N-1 helpers. Chunks are taken from a shared
 * counter, several per thread, so uneven workgroups balance out. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

struct pk_pool {
    int nthreads;
    pthread_t *threads;
    int nstarted;
    pthread_mutex_t run_lock;   /* serializes launches */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    unsigned long generation;
    int shutdown;
    /* the current job */
    pk_range_fn fn;
    void **args;
    const int32_t *launch;
    int64_t total, chunk, next;
    int busy;                   /* helpers still working on this generation */
};

int pk_default_threads(void) {
    const char *env = getenv("POLYKERN_NUM_THREADS");
    long n = 0;
    if (env && *env) {
        char *end;
        n = strtol(env, &end, 10);
        if (*end || n <= 0) n = 0;
    }
    if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = 1;
    if (n > 256) n = 256;
    return (int)n;
}

static int take(pk_pool *p, int64_t *b, int64_t *e) {
    int ok = 0;
    pthread_mutex_lock(&p->mu);
    if (p->next < p->total) {
        *b = p->next;
        *e = p->total - p->next > p->chunk ? p->next + p->chunk : p->total;
        p->next = *e;
        ok = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

static void work(pk_pool *p) {
    int64_t b, e;
    while (take(p, &b, &e)) p->fn(p->args, p->launch, b, e);
}

static void *helper(void *arg) {
    pk_pool *p = (pk_pool *)arg;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->shutdown && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->shutdown) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        work(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}

pk_pool *pk_pool_create(int nthreads, pk_error *err) {
    pk_pool *p = (pk_pool *)calloc(1, sizeof *p);
    int i;
    if (!p) { pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
    p->nthreads = nthreads > 0 ? nthreads : pk_default_threads();
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->nthreads > 1) {
        p->threads = (pthread_t *)calloc((size_t)p->nthreads - 1, sizeof(pthread_t));
        if (!p->threads) { pk_pool_destroy(p); pk_fail(err, PK_ERR_NOMEM, "out of memory"); return NULL; }
        for (i = 0; i < p->nthreads - 1; i++) {
            if (pthread_create(&p->threads[i], NULL, helper, p) != 0) break;
            p->nstarted++;
        }
        if (p->nstarted == 0) p->nthreads = 1;   /* still correct: the caller does the work */
        else p->nthreads = p->nstarted + 1;
    }
    return p;
}

int pk_pool_threads(const pk_pool *p) { return p->nthreads; }

int pk_pool_run(pk_pool *p, pk_range_fn fn, void **args, const int32_t *launch, int64_t total,
                pk_error *err) {
    int64_t pieces;
    (void)err;
    if (total <= 0) return 0;
    pthread_mutex_lock(&p->run_lock);
    if (p->nstarted == 0 || total == 1) {
        fn(args, launch, 0, total);
        pthread_mutex_unlock(&p->run_lock);
        return 0;
    }
    pieces = (int64_t)p->nthreads * 4;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->args = args;
    p->launch = launch;
    p->total = total;
    p->chunk = (total + pieces - 1) / pieces;
    p->next = 0;
    p->busy = p->nstarted;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    work(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy) pthread_cond_wait(&p->done, &p->mu);
    p->fn = NULL;
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->run_lock);
    return 0;
}

void pk_pool_destroy(pk_pool *p) {
    int i;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (i = 0; i < p->nstarted; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_lock);
    free(p);
}

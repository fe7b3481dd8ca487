/* Compiled kernel of the float64 reference backward (the operator's reference.py).
 *
 * One function, backward_block, computes the same fixed-order arithmetic as the numpy
 * path of the operator's reference.py, bit for bit:
 *
 *   terms: t[i, j] = g[i, j] / (kh[i] * kw[j]), one correctly rounded division per term
 *   (the window area is an exact float64 integer); then, along one axis and then the
 *   other, each position p gets acc = t[lo(p)]; acc = acc + t[lo(p) + r] for
 *   r = 1..count(p)-1, in window order, stored as float64 between the two stages.
 *
 * The numpy path also adds a padding -0.0 for r >= count(p); x + (-0.0) == x for every
 * x (+0, -0, NaN, inf included), so this kernel adds it or skips it as is cheaper. Where
 * every window size is a power of two it multiplies by the exact reciprocal of the area
 * instead of dividing: the same real number, so the same rounding.
 *
 * NaN payloads: when both terms of a sum are NaN, IEEE 754 leaves open which one the
 * result carries, and x86 returns its first source operand. numpy's SIMD add loops put
 * the accumulator first (the sign of a NaN + -NaN sum is the accumulator's), but its
 * scalar tails and single-element calls do not always, so the numpy path's NaN sign then
 * depends on the chunk size. Here ADD() makes "the accumulator wins" explicit instead of
 * leaving the operand order to the compiler: the same bits as numpy's SIMD body, on any
 * compiler, any thread count, any vector width. Every other value (default NaN of
 * inf - inf included) comes from the one IEEE operation and is identical. The stage order
 * (W first or H first) is chosen by the caller. No FMA (-ffp-contract=off), no
 * reassociation (no -ffast-math): every sum is formed in the same order as numpy forms
 * it, one IEEE operation at a time.
 *
 * Planes (rows) are independent; threads claim blocks of planes, so every output element
 * is computed by exactly one thread in the same order and the result does not depend on
 * the thread count.
 *
 * Only the buffer protocol is used (no numpy headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <pthread.h>
#include <sched.h>
#define SPREAD_HAVE_THREADS 1
#else
#define SPREAD_HAVE_THREADS 0
#endif

#define MAX_THREADS 64
/* lanes4 (see wstage4) for intermediates (Ho x W) of at most this many elements. */
#define LANES4_MAX_ELEMS 4096

/* acc + x, the accumulator's NaN winning over x's (see the header). acc is always a
 * quiet NaN when NaN (the result of a division or an addition), so returning it equals
 * what an addition with acc as first operand returns. */
#define ADD(acc, x) ((acc) != (acc) ? (acc) : (acc) + (x))

typedef struct {
    Py_ssize_t out_size;   /* windows along the axis (Ho or Wo) */
    Py_ssize_t in_size;    /* positions along the axis (H or W) */
    const int64_t *lo;     /* first window covering each position (in_size) */
    const int64_t *count;  /* windows covering each position (in_size) */
    const double *size;    /* window sizes as float64 (out_size) */
    const double *recip;   /* 1 / size, exact: set when every size of both axes is a power
                            * of two (then x * (rh * rw) rounds exactly as x / (sh * sw)) */
    Py_ssize_t run;        /* in_size / out_size when windows tile the axis (each position
                            * in exactly one window, `run` positions per window), else 0 */
    const int64_t *second; /* W axis, when no position has more than two windows: the
                            * second window of each position, or out_size (a padding
                            * slot holding -0.0, the identity of IEEE addition) */
} axis_plan;

typedef struct {
    const void *g;         /* rows x Ho x Wo, float64 or (g_f32) float32 */
    int g_f32;
    double *out;           /* rows x H x W */
    axis_plan ph, pw;
    int w_first;
    int lanes4;            /* W stage of four planes at once (see wstage4) */
    Py_ssize_t rows;       /* planes in all */
    Py_ssize_t block;      /* planes claimed at a time */
    Py_ssize_t *next;      /* shared: the first plane not claimed yet (atomic) */
    double *scratch;       /* per-thread */
} job;

/* Elements of per-thread scratch a job needs. */
static Py_ssize_t scratch_elems(const axis_plan *ph, const axis_plan *pw, int w_first,
                                int lanes4)
{
    if (lanes4) /* four planes: the terms and pads (Ho x (Wo+1) x 4) + four intermediates */
        return 4 * ph->out_size * (pw->out_size + 1) + 4 * ph->out_size * pw->in_size;
    if (w_first) /* one row of terms and its pad (Wo + 1) + the intermediate (Ho x W) */
        return pw->out_size + 1 + ph->out_size * pw->in_size;
    /* the terms of the plane (Ho x Wo) + the intermediate with a pad column (H x Wo+1) */
    return ph->out_size * pw->out_size + ph->in_size * (pw->out_size + 1);
}

/* Four lanes at a time with GCC/clang vector extensions: every lane is the same IEEE
 * operation as the scalar code (division, multiplication, addition, float32 -> float64
 * widening round exactly per element), so vector width never changes a bit. On x86-64 the
 * compiler lowers them to two SSE2 operations, or one AVX2 operation in the avx2 clone of
 * run_rows below. */
#if defined(__GNUC__) || defined(__clang__)
#define SPREAD_VEC 1
#define INLINE static inline __attribute__((always_inline))
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int64_t v4i __attribute__((vector_size(32)));
INLINE v4d load4(const double *p) { v4d v; memcpy(&v, p, sizeof v); return v; }
INLINE void store4(double *p, v4d v) { memcpy(p, &v, sizeof v); }
INLINE v4d load4f(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, v4d);
}
/* ADD on four lanes: a + b, a's NaN where a is NaN. */
INLINE v4d add4(v4d a, v4d b)
{
    v4i nan = (v4i)(a != a);
    v4d s = a + b;
    return (v4d)(((v4i)a & nan) | ((v4i)s & ~nan));
}
#else
#define SPREAD_VEC 0
#define INLINE static inline
#endif

/* t[k] = g[k] / (sh * sw[k]) for k < n: one correctly rounded division per term, by the
 * exact window area (a product of two integers below 2^53 is exact in float64). With
 * rw (every size a power of two) it multiplies by the exact reciprocal instead: the same
 * real number, so the same rounding. */
INLINE void scale_row(double *restrict t, const void *g, int f32, double sh,
                      const double *sw, double rh, const double *rw, Py_ssize_t n)
{
    const double *gd = (const double *)g;
    const float *gf = (const float *)g;
    Py_ssize_t k = 0;
#if SPREAD_VEC
    v4d vh = {sh, sh, sh, sh}, vr = {rh, rh, rh, rh};
    for (; k + 4 <= n; k += 4) {
        v4d x = f32 ? load4f(gf + k) : load4(gd + k);
        x = rw ? x * (vr * load4(rw + k)) : x / (vh * load4(sw + k));
        store4(t + k, x);
    }
#endif
    for (; k < n; k++) {
        double x = f32 ? (double)gf[k] : gd[k];
        t[k] = rw ? x * (rh * rw[k]) : x / (sh * sw[k]);
    }
}

INLINE void copy_row(double *restrict d, const double *restrict a, Py_ssize_t n)
{
    if (n >= 256) {
        memcpy(d, a, (size_t)n * sizeof(double));
        return;
    }
    Py_ssize_t k = 0;
#if SPREAD_VEC
    if (n >= 4) {
        for (; k + 4 < n; k += 4)
            store4(d + k, load4(a + k));
        store4(d + n - 4, load4(a + n - 4)); /* the last four, overlapping: no scalar tail */
        return;
    }
#endif
    for (; k < n; k++)
        d[k] = a[k];
}

/* d[k] = ADD(a[k], b[k]); d may be a (in place), never b. */
INLINE void add_rows(double *d, const double *a, const double *restrict b, Py_ssize_t n)
{
    Py_ssize_t k = 0;
#if SPREAD_VEC
    if (d != a && n >= 4) {
        /* Not in place: the last four again, overlapping, instead of a scalar tail. */
        for (; k + 4 < n; k += 4)
            store4(d + k, add4(load4(a + k), load4(b + k)));
        store4(d + n - 4, add4(load4(a + n - 4), load4(b + n - 4)));
        return;
    }
    for (; k + 4 <= n; k += 4)
        store4(d + k, add4(load4(a + k), load4(b + k)));
#endif
    for (; k < n; k++)
        d[k] = ADD(a[k], b[k]);
}

INLINE void fill_row(double *d, double v, Py_ssize_t n)
{
    Py_ssize_t k = 0;
#if SPREAD_VEC
    v4d vv = {v, v, v, v};
    for (; k + 4 <= n; k += 4)
        store4(d + k, vv);
#endif
    for (; k < n; k++)
        d[k] = v;
}

/* Spread one row of terms s (pw windows) onto dst (pw positions): dst[p] = s[lo(p)] +
 * s[lo(p) + 1] + ... in window order. */
INLINE void spread_row(const double *restrict s, const axis_plan *pw, double *restrict dst)
{
    if (pw->run == 1) {
        copy_row(dst, s, pw->in_size);
        return;
    }
    if (pw->run > 1) {
        for (Py_ssize_t j = 0; j < pw->out_size; j++)
            fill_row(dst + j * pw->run, s[j], pw->run);
        return;
    }
    const int64_t *lo = pw->lo, *cnt = pw->count;
    if (pw->second) {
        /* At most two windows per position: branch-free (the count pattern of a
         * non-divisible axis is irregular, and a mispredicted branch per element cost
         * more than the rest of the plane). */
        const int64_t *hi = pw->second;
        for (Py_ssize_t p = 0; p < pw->in_size; p++)
            dst[p] = ADD(s[lo[p]], s[hi[p]]);
        return;
    }
    for (Py_ssize_t p = 0; p < pw->in_size; p++) {
        const double *w = s + lo[p];
        double acc = w[0];
        for (int64_t r = 1; r < cnt[p]; r++)
            acc = ADD(acc, w[r]);
        dst[p] = acc;
    }
}

/* Spread whole rows: dst[p, :] = src[lo(p), :] + src[lo(p)+1, :] + ... (width n; rows of
 * dst `stride` apart). */
INLINE void spread_rows(const double *restrict src, Py_ssize_t n, const axis_plan *ph,
                        double *restrict dst, Py_ssize_t stride)
{
    for (Py_ssize_t p = 0; p < ph->in_size; p++) {
        const double *a = src + ph->lo[p] * n;
        double *d = dst + p * stride;
        int64_t c = ph->count[p];
        if (c == 1) {
            copy_row(d, a, n);
        } else {
            add_rows(d, a, a + n, n);
            for (int64_t r = 2; r < c; r++)
                add_rows(d, d, a + r * n, n);
        }
    }
}

#if SPREAD_VEC
#if defined(__clang__)
#define SHUF(a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
#define SHUF(a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, (v4i){i0, i1, i2, i3})
#endif

/* The terms and W stage of four planes at once, plane k in lane k of every vector:
 * T[i][q] = g_k[i, q] / (kh[i] * kw[q]) (T[i][Wo] = -0.0, the pad), then for every
 * position p mid_k[i, p] = ADD(T[i][lo(p)], T[i][second(p)]), the same IEEE operations
 * per lane as spread_row does per element. Four positions at a time are transposed
 * (4 x 4) so each plane's row is written with whole vector stores: about a third of the
 * instructions of four scalar gather loops. g: plane 0 of the four (planes are contiguous);
 * mid4: four intermediates (Ho x W each), one after the other. */
INLINE void wstage4(const job *j, const char *g, double *T, double *mid4)
{
    const axis_plan *ph = &j->ph, *pw = &j->pw;
    Py_ssize_t ho = ph->out_size, wo = pw->out_size, w = pw->in_size, plane = ho * wo;
    const double *gd = (const double *)g;
    const float *gf = (const float *)g;
    const double *rh = ph->recip, *rw = pw->recip;
    const v4d pad = {-0.0, -0.0, -0.0, -0.0};
    for (Py_ssize_t i = 0; i < ho; i++) {
        double *Ti = T + 4 * i * (wo + 1);
        for (Py_ssize_t q = 0; q < wo; q++) {
            Py_ssize_t e = i * wo + q;
            v4d x = j->g_f32 ? (v4d){gf[e], gf[e + plane], gf[e + 2 * plane], gf[e + 3 * plane]}
                             : (v4d){gd[e], gd[e + plane], gd[e + 2 * plane], gd[e + 3 * plane]};
            double d = rw ? rh[i] * rw[q] : ph->size[i] * pw->size[q];
            v4d vd = {d, d, d, d};
            store4(Ti + 4 * q, rw ? x * vd : x / vd);
        }
        store4(Ti + 4 * wo, pad);
    }
    const int64_t *lo = pw->lo, *hi = pw->second;
    Py_ssize_t mstride = ho * w;
    for (Py_ssize_t i = 0; i < ho; i++) {
        const double *Ti = T + 4 * i * (wo + 1);
        double *m = mid4 + i * w;
        Py_ssize_t p = 0;
        for (; p + 4 <= w; p += 4) {
            v4d a = add4(load4(Ti + 4 * lo[p]), load4(Ti + 4 * hi[p]));
            v4d b = add4(load4(Ti + 4 * lo[p + 1]), load4(Ti + 4 * hi[p + 1]));
            v4d c = add4(load4(Ti + 4 * lo[p + 2]), load4(Ti + 4 * hi[p + 2]));
            v4d d = add4(load4(Ti + 4 * lo[p + 3]), load4(Ti + 4 * hi[p + 3]));
            v4d t0 = SHUF(a, b, 0, 4, 2, 6), t1 = SHUF(a, b, 1, 5, 3, 7);
            v4d t2 = SHUF(c, d, 0, 4, 2, 6), t3 = SHUF(c, d, 1, 5, 3, 7);
            store4(m + p, SHUF(t0, t2, 0, 1, 4, 5));
            store4(m + mstride + p, SHUF(t1, t3, 0, 1, 4, 5));
            store4(m + 2 * mstride + p, SHUF(t0, t2, 2, 3, 6, 7));
            store4(m + 3 * mstride + p, SHUF(t1, t3, 2, 3, 6, 7));
        }
        for (; p < w; p++) {
            v4d a = add4(load4(Ti + 4 * lo[p]), load4(Ti + 4 * hi[p]));
            for (int k = 0; k < 4; k++)
                m[k * mstride + p] = a[k];
        }
    }
}
#endif

/* The avx2 clone is picked at load time where the CPU has AVX2 (GCC's ifunc dispatch):
 * wider lanes, the same roundings. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
static void run_rows(const job *j, Py_ssize_t row_begin, Py_ssize_t row_end)
{
    const axis_plan *ph = &j->ph, *pw = &j->pw;
    Py_ssize_t ho = ph->out_size, wo = pw->out_size, h = ph->in_size, w = pw->in_size;
    size_t isz = j->g_f32 ? sizeof(float) : sizeof(double);
    const double *rh = ph->recip, *rw = pw->recip;
    for (Py_ssize_t row = row_begin; row < row_end; row++) {
        const char *g = (const char *)j->g + (size_t)(row * ho * wo) * isz;
        double *out = j->out + row * h * w;
#if SPREAD_VEC
        if (j->lanes4 && row + 4 <= row_end) {
            double *T = j->scratch, *mid4 = j->scratch + 4 * ho * (wo + 1);
            wstage4(j, g, T, mid4);
            for (int k = 0; k < 4; k++)
                spread_rows(mid4 + k * ho * w, w, ph, out + k * h * w, w);
            row += 3;
            continue;
        }
#endif
        if (j->w_first) {
            /* W stage per gradOutput row (terms, then spread into mid), then H stage. */
            double *t = j->scratch, *mid = j->scratch + wo + 1;
            t[wo] = -0.0; /* the pad slot of spread_row */
            for (Py_ssize_t i = 0; i < ho; i++) {
                scale_row(t, g + (size_t)(i * wo) * isz, j->g_f32, ph->size[i], pw->size,
                          rh ? rh[i] : 0.0, rw, wo);
                spread_row(t, pw, mid + i * w);
            }
            spread_rows(mid, w, ph, out, w);
        } else {
            /* Terms of the whole plane, H stage into mid (H x Wo), W stage per row. */
            double *t = j->scratch, *mid = j->scratch + ho * wo;
            for (Py_ssize_t p = 0; p < h; p++)
                mid[p * (wo + 1) + wo] = -0.0; /* the pad slot of each row */
            for (Py_ssize_t i = 0; i < ho; i++)
                scale_row(t + i * wo, g + (size_t)(i * wo) * isz, j->g_f32, ph->size[i],
                          pw->size, rh ? rh[i] : 0.0, rw, wo);
            spread_rows(t, wo, ph, mid, wo + 1);
            for (Py_ssize_t p = 0; p < h; p++)
                spread_row(mid + p * (wo + 1), pw, out + p * w);
        }
    }
}

/* Claim blocks of planes from the shared counter until none is left. Which thread
 * computes a plane never changes its bits (each plane is computed whole, by one thread,
 * in the same order); claiming dynamically means a thread that the OS does not run for a
 * while (a busy core) delays nothing: the others take its share. */
static void run_job(job *j)
{
    for (;;) {
        Py_ssize_t b = __atomic_fetch_add(j->next, j->block, __ATOMIC_RELAXED);
        if (b >= j->rows)
            return;
        run_rows(j, b, b + j->block < j->rows ? b + j->block : j->rows);
    }
}

#if SPREAD_HAVE_THREADS
/* A persistent pool of worker threads: starting a thread costs 30-50 us on a small VM,
 * as much as a whole chunk's work, so workers are started once and woken per call.
 *
 * One call at a time uses the pool (dispatch_mu); a concurrent call (another Python
 * thread, the GIL being released) runs on its own thread instead, with the same result.
 * After fork() the child has none of the parent's workers: pthread_atfork resets the
 * pool there, and the child starts its own on first use. */
static pthread_mutex_t dispatch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int pool_workers = 0;        /* workers started (guarded by pool_mu) */
static unsigned long pool_gen = 0;  /* bumped once per dispatch */
static job *pool_jobs = NULL;       /* the dispatch's jobs; worker i runs jobs[i + 1] */
static int pool_active = 0;         /* workers that may join this dispatch */
static int pool_open = 0;           /* the dispatch still has planes to hand out */
static int pool_busy = 0;           /* workers inside the dispatch */
static int atfork_registered = 0;
static unsigned long worker_born[MAX_THREADS]; /* pool_gen when each worker was started */
static pthread_t worker_tid[MAX_THREADS];

#if defined(__linux__) && defined(CPU_SET)
#define SPREAD_STEER 1
static int steered_from = -1; /* the caller's CPU the workers were last kept off */

/* Keep the workers off the CPU the caller runs on. Woken from a busy caller, Linux tends
 * to queue a worker on the caller's own CPU (wake-affine placement) and only migrates it
 * milliseconds later: the "parallel" call then ran at one thread's speed about half the
 * time. Only when the caller's CPU changed since the last call (sched_getcpu is a vDSO
 * read); the process's affinity mask is respected; with one CPU allowed, nothing. */
static void steer_workers(void)
{
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu == steered_from)
        return;
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 || !CPU_ISSET(cpu, &mask))
        return;
    CPU_CLR(cpu, &mask);
    if (CPU_COUNT(&mask) == 0)
        return;
    for (int i = 0; i < pool_workers; i++)
        pthread_setaffinity_np(worker_tid[i], sizeof mask, &mask);
    steered_from = cpu;
}
#else
#define SPREAD_STEER 0
#endif

static void *worker_main(void *arg)
{
    int idx = (int)(intptr_t)arg;
    pthread_mutex_lock(&pool_mu);
    /* Not pool_gen: the dispatch that started this worker has bumped it already. */
    unsigned long seen = worker_born[idx];
    for (;;) {
        while (pool_gen == seen)
            pthread_cond_wait(&start_cv, &pool_mu);
        seen = pool_gen;
        /* A worker woken after the caller finished every plane has nothing to do: the
         * caller does not wait for workers that never joined. */
        if (pool_open && idx < pool_active) {
            job *j = &pool_jobs[idx + 1];
            pool_busy++;
            pthread_mutex_unlock(&pool_mu);
            run_job(j);
            pthread_mutex_lock(&pool_mu);
            if (--pool_busy == 0)
                pthread_cond_signal(&done_cv);
        }
    }
    return NULL;
}

static void atfork_prepare(void) { pthread_mutex_lock(&dispatch_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&dispatch_mu); }
static void atfork_child(void)
{
    /* The workers do not exist here; no dispatch was running (prepare held dispatch_mu). */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    dispatch_mu = mu;
    pool_mu = mu;
    start_cv = cv;
    done_cv = cv;
    pool_workers = 0;
    pool_gen = 0;
#if SPREAD_STEER
    steered_from = -1;
#endif
    pool_jobs = NULL;
    pool_active = pool_open = pool_busy = 0;
}

/* Run jobs[0..n) (they share one plane counter): jobs[0] on the calling thread, the
 * others on pool workers as they wake. The caller takes planes too, so it finishes
 * everything alone when no worker can be started, the pool is busy with another call,
 * or the workers do not get a core. */
static void run_jobs(job *jobs, int n)
{
    if (n <= 1 || pthread_mutex_trylock(&dispatch_mu) != 0) {
        run_job(&jobs[0]);
        return;
    }
    pthread_mutex_lock(&pool_mu);
    while (pool_workers < n - 1) {
        pthread_t tid;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        worker_born[pool_workers] = pool_gen;
        int rc = pthread_create(&tid, &attr, worker_main, (void *)(intptr_t)pool_workers);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        worker_tid[pool_workers++] = tid;
#if SPREAD_STEER
        steered_from = -1; /* a new worker: steer again */
#endif
    }
#if SPREAD_STEER
    steer_workers();
#endif
    pool_jobs = jobs;
    pool_active = pool_workers < n - 1 ? pool_workers : n - 1;
    pool_open = 1;
    pool_busy = 0;
    pool_gen++;
    pthread_cond_broadcast(&start_cv);
    pthread_mutex_unlock(&pool_mu);
    run_job(&jobs[0]);
    pthread_mutex_lock(&pool_mu);
    pool_open = 0; /* every plane is claimed: late workers stay out */
    while (pool_busy > 0)
        pthread_cond_wait(&done_cv, &pool_mu);
    pool_active = 0;
    pool_jobs = NULL;
    pthread_mutex_unlock(&pool_mu);
    pthread_mutex_unlock(&dispatch_mu);
}
#else
static void run_jobs(job *jobs, int n)
{
    (void)n;
    run_job(&jobs[0]); /* takes every plane */
}
#endif

/* Check a buffer: C-contiguous, items of the given kind (0 int64, 1 float64, 2 float64 or
 * float32), `n` items. */
static int check_buffer(Py_buffer *b, const char *name, int kind, Py_ssize_t n)
{
    const char *f = b->format ? b->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    int ok_fmt = kind == 0 ? ((strcmp(f, "l") == 0 || strcmp(f, "q") == 0) && b->itemsize == 8)
                           : ((strcmp(f, "d") == 0 && b->itemsize == 8) ||
                              (kind == 2 && strcmp(f, "f") == 0 && b->itemsize == 4));
    if (!ok_fmt) {
        PyErr_Format(PyExc_TypeError, "%s: expected a %s buffer, got format %s", name,
                     kind == 0 ? "int64" : kind == 1 ? "float64" : "float64 or float32", f);
        return -1;
    }
    if (b->len != n * b->itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items, got %zd", name, n,
                     b->len / b->itemsize);
        return -1;
    }
    return 0;
}

static PyObject *backward_block(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objs[8];
    Py_ssize_t rows;
    int w_first, threads;
    if (!PyArg_ParseTuple(args, "OOOOOOOOnpi:backward_block", &objs[0], &objs[1],
                          &objs[2], &objs[3], &objs[4], &objs[5], &objs[6], &objs[7],
                          &rows, &w_first, &threads))
        return NULL;
    /* g, out, h_lo, h_count, h_size, w_lo, w_count, w_size */
    static const char *names[8] = {"g", "out", "h_lo", "h_count", "h_size",
                                   "w_lo", "w_count", "w_size"};
    Py_buffer bufs[8];
    int got = 0;
    PyObject *result = NULL;
    double *sizes = NULL, *scratch = NULL;
    int64_t *second = NULL;
    for (; got < 8; got++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == 1 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[got], &bufs[got], flags) < 0)
            goto done;
    }
    if (rows < 0) {
        PyErr_SetString(PyExc_ValueError, "rows must be >= 0");
        goto done;
    }
    Py_ssize_t h = bufs[2].len / 8, ho = bufs[4].len / 8;
    Py_ssize_t w = bufs[5].len / 8, wo = bufs[7].len / 8;
    if (check_buffer(&bufs[2], names[2], 0, h) || check_buffer(&bufs[3], names[3], 0, h) ||
        check_buffer(&bufs[4], names[4], 0, ho) || check_buffer(&bufs[5], names[5], 0, w) ||
        check_buffer(&bufs[6], names[6], 0, w) || check_buffer(&bufs[7], names[7], 0, wo) ||
        check_buffer(&bufs[0], names[0], 2, rows * ho * wo) ||
        check_buffer(&bufs[1], names[1], 1, rows * h * w))
        goto done;
    if (ho < 1 || wo < 1 || h < 1 || w < 1) {
        PyErr_SetString(PyExc_ValueError, "every spatial size must be >= 1");
        goto done;
    }
    axis_plan ph = {ho, h, bufs[2].buf, bufs[3].buf, NULL, NULL, 0, NULL};
    axis_plan pw = {wo, w, bufs[5].buf, bufs[6].buf, NULL, NULL, 0, NULL};
    /* Validate the plans: a bad plan must raise, never read out of bounds. */
    const axis_plan *plans[2] = {&ph, &pw};
    for (int a = 0; a < 2; a++) {
        const axis_plan *p = plans[a];
        for (Py_ssize_t i = 0; i < p->in_size; i++) {
            if (p->count[i] < 1 || p->lo[i] < 0 || p->lo[i] + p->count[i] > p->out_size) {
                PyErr_Format(PyExc_ValueError, "%s plan: bad window range at %zd",
                             a ? "W" : "H", i);
                goto done;
            }
        }
    }
    /* Sizes as float64, their reciprocals (used only when every size of both axes is a
     * power of two: then each is exact) and the tiling run of each axis. */
    sizes = PyMem_Malloc((size_t)(2 * (ho + wo)) * sizeof(double));
    if (!sizes) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *hs = bufs[4].buf, *ws = bufs[7].buf;
    int pow2 = 1;
    for (Py_ssize_t i = 0; i < ho + wo; i++) {
        int64_t s = i < ho ? hs[i] : ws[i - ho];
        if (s < 1) {
            PyErr_Format(PyExc_ValueError, "window size %lld < 1", (long long)s);
            goto done;
        }
        pow2 &= (s & (s - 1)) == 0;
        sizes[i] = (double)s;
        sizes[ho + wo + i] = 1.0 / (double)s;
    }
    ph.size = sizes;
    pw.size = sizes + ho;
    ph.recip = pow2 ? sizes + ho + wo : NULL;
    pw.recip = pow2 ? sizes + 2 * ho + wo : NULL;
    second = PyMem_Malloc((size_t)w * sizeof(int64_t));
    if (!second) {
        PyErr_NoMemory();
        goto done;
    }
    int two = 1;
    for (Py_ssize_t i = 0; i < w; i++) {
        two &= pw.count[i] <= 2;
        second[i] = pw.count[i] == 2 ? pw.lo[i] + 1 : wo;
    }
    pw.second = two ? second : NULL;
    for (int a = 0; a < 2; a++) {
        axis_plan *p = a ? &pw : &ph;
        p->run = p->in_size % p->out_size == 0 ? p->in_size / p->out_size : 0;
        for (Py_ssize_t i = 0; p->run && i < p->in_size; i++)
            if (p->count[i] != 1 || p->lo[i] != i / p->run)
                p->run = 0; /* not the tiling a valid plan has: the general loop */
    }

    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > rows)
        threads = rows > 0 ? (int)rows : 1;
#if !SPREAD_HAVE_THREADS
    threads = 1;
#endif
    /* Four planes in the lanes of one vector: the W stage of small non-divisible planes
     * (where its gathers are most of the work), when the planes come in fours. */
    int lanes4 = SPREAD_VEC && w_first && pw.second && !pw.run &&
                 ho * w <= LANES4_MAX_ELEMS && rows >= 4;
    /* Each thread's scratch on cache lines of its own (8 doubles = 64 bytes): threads that
     * wrote neighbouring halves of one line made every row a cache-line ping-pong. */
    Py_ssize_t per = (scratch_elems(&ph, &pw, w_first, lanes4) + 7) / 8 * 8;
    scratch = PyMem_RawMalloc((size_t)(per * threads + 8) * sizeof(double));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    double *lines = (double *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    job jobs[MAX_THREADS];
    Py_ssize_t next = 0;
    /* Blocks small enough to balance (about 8 per thread), large enough to claim rarely. */
    Py_ssize_t block = rows / (8 * threads);
    if (block < 1)
        block = 1;
    if (lanes4)
        block = (block + 3) / 4 * 4;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){bufs[0].buf, bufs[0].itemsize == 4, bufs[1].buf, ph, pw, w_first,
                        lanes4, rows, block, &next, lines + per * t};
    }
    Py_BEGIN_ALLOW_THREADS
    run_jobs(jobs, threads);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyMem_RawFree(scratch);
    PyMem_Free(sizes);
    PyMem_Free(second);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"backward_block", backward_block, METH_VARARGS,
     "backward_block(g, out, h_lo, h_count, h_size, w_lo, w_count, w_size, rows, "
     "w_first, threads)\n\n"
     "Backward of adaptive average pooling 2D on a C-contiguous float64 or float32 "
     "block g (rows, Ho, Wo) into float64 out (rows, H, W), with the numpy path's exact "
     "arithmetic (terms g / (kh * kw), then the two spreads).\n"
     "*_lo / *_count: int64 first window and window count of each position; *_size: "
     "int64 window sizes. w_first: spread along W first. threads: row-parallel threads "
     "(the result does not depend on it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aclcheck.ops.adaptive_avg_pool2d_backward._spread",
    "Compiled kernel of the float64 reference backward (bit-identical to numpy).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__spread(void)
{
#if SPREAD_HAVE_THREADS
    if (!atfork_registered) {
        if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0) {
            PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
            return NULL;
        }
        atfork_registered = 1;
    }
#endif
    return PyModule_Create(&module);
}

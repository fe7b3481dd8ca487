/* Compiled kernel of the float64 reference backward (aclcheck.reference).
 *
 * One function, backward_block, computes the same fixed-order arithmetic as the numpy
 * path of aclcheck.reference._backward_block, bit for bit:
 *
 *   stage along one axis: scaled = x / (double)size[window]; then for each input
 *   position p: acc = scaled[lo(p)]; acc = acc + scaled[lo(p) + r] for r = 1..count(p)-1.
 *
 * The numpy path also adds a padding -0.0 for r >= count(p); x + (-0.0) == x for every
 * x (+0, -0, NaN, inf included), so skipping it changes nothing.
 *
 * NaN payloads: when both terms of a sum are NaN, IEEE 754 leaves open which one the
 * result carries, and x86 returns its first source operand. numpy's SIMD add loops put
 * the accumulator first (the sign of a NaN + -NaN sum is the accumulator's), but its
 * scalar tails and single-element calls do not always, so the numpy path's NaN sign then
 * depends on the chunk size. Here ADD() makes "the accumulator wins" explicit instead of
 * leaving the operand order to the compiler: the same bits as numpy's SIMD body, on any
 * compiler, any thread count. Every other value (default NaN of inf - inf included) comes
 * from the one IEEE addition and is identical. The stage order (W
 * first or H first) is chosen by the caller; the intermediate is stored as float64.
 * No FMA (-ffp-contract=off), no reassociation (no -ffast-math): every sum is formed in
 * the same order as numpy forms it, one IEEE operation at a time.
 *
 * Planes (rows) are independent; with threads > 1 each thread (the caller and pool
 * workers) takes one contiguous range of rows, so every output element is computed by exactly one thread in the same order
 * and the result does not depend on the thread count.
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
#define SPREAD_HAVE_THREADS 1
#else
#define SPREAD_HAVE_THREADS 0
#endif

#define MAX_THREADS 64

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
} axis_plan;

typedef struct {
    const void *g;         /* rows x Ho x Wo, float64 or (g_f32) float32 */
    int g_f32;
    double *out;           /* rows x H x W */
    axis_plan ph, pw;
    int w_first;
    Py_ssize_t rows;       /* planes in all */
    Py_ssize_t block;      /* planes claimed at a time */
    Py_ssize_t *next;      /* shared: the first plane not claimed yet (atomic) */
    double *scratch;       /* per-thread */
} job;

/* Elements of per-thread scratch a job needs. */
static Py_ssize_t scratch_elems(const axis_plan *ph, const axis_plan *pw, int w_first)
{
    if (w_first) /* one scaled gradOutput row (Wo) + the intermediate plane (Ho x W) */
        return pw->out_size + ph->out_size * pw->in_size;
    /* the scaled gradOutput plane (Ho x Wo) + the intermediate plane (H x Wo) */
    return ph->out_size * pw->out_size + ph->in_size * pw->out_size;
}

/* Spread one row of already scaled values s (pw windows) onto dst (pw positions). */
static void spread_row(const double *restrict s, const axis_plan *pw, double *restrict dst)
{
    const int64_t *lo = pw->lo, *cnt = pw->count;
    for (Py_ssize_t p = 0; p < pw->in_size; p++) {
        const double *w = s + lo[p];
        double acc = w[0];
        for (int64_t r = 1; r < cnt[p]; r++)
            acc = ADD(acc, w[r]);
        dst[p] = acc;
    }
}

/* dst[k] = src[k] / den[k] (den NULL: / d), two lanes at a time where the compiler has
 * vector extensions: an elementwise IEEE division rounds each lane exactly as a scalar
 * one, so this only halves the cost of the divisions that dominate small planes. */
#if defined(__GNUC__) || defined(__clang__)
typedef double v2d __attribute__((vector_size(16)));
#endif
static void divide_row(double *dst, const double *src, const double *den, double d,
                       Py_ssize_t n)
{
    Py_ssize_t k = 0;
#if defined(__GNUC__) || defined(__clang__)
    v2d vd = {d, d};
    for (; k + 2 <= n; k += 2) {
        v2d a, b;
        memcpy(&a, src + k, sizeof a);
        if (den)
            memcpy(&b, den + k, sizeof b);
        else
            b = vd;
        a = a / b;
        memcpy(dst + k, &a, sizeof a);
    }
#endif
    for (; k < n; k++)
        dst[k] = src[k] / (den ? den[k] : d);
}

/* Spread whole rows: dst[p, :] = src[lo(p), :] + src[lo(p)+1, :] + ... (width n). */
static void spread_rows(const double *restrict src, Py_ssize_t n, const axis_plan *ph,
                        double *restrict dst)
{
    for (Py_ssize_t p = 0; p < ph->in_size; p++) {
        const double *a = src + ph->lo[p] * n;
        double *d = dst + p * n;
        int64_t c = ph->count[p];
        if (c == 1) {
            memcpy(d, a, (size_t)n * sizeof(double));
        } else if (c == 2) {
            const double *b = a + n;
            for (Py_ssize_t k = 0; k < n; k++)
                d[k] = ADD(a[k], b[k]);
        } else {
            for (Py_ssize_t k = 0; k < n; k++) {
                double acc = a[k];
                for (int64_t r = 1; r < c; r++)
                    acc = ADD(acc, a[r * n + k]);
                d[k] = acc;
            }
        }
    }
}

static void run_rows(const job *j, Py_ssize_t row_begin, Py_ssize_t row_end)
{
    const axis_plan *ph = &j->ph, *pw = &j->pw;
    Py_ssize_t ho = ph->out_size, wo = pw->out_size, h = ph->in_size, w = pw->in_size;
    for (Py_ssize_t row = row_begin; row < row_end; row++) {
        /* gradOutput as float64: a float32 widens exactly (as numpy's cast does). */
        const double *gd = (const double *)j->g + row * ho * wo;
        const float *gf = (const float *)j->g + row * ho * wo;
        double *out = j->out + row * h * w;
        if (j->w_first) {
            double *srow = j->scratch, *mid = j->scratch + wo;
            /* W stage: mid[i, :] = spread(g[i, :] / wsize), then / hsize[i] (the H
             * stage's scaling of the stored intermediate, done once per element). */
            for (Py_ssize_t i = 0; i < ho; i++) {
                const double *gi = gd + i * wo;
                if (j->g_f32) {
                    for (Py_ssize_t q = 0; q < wo; q++)
                        srow[q] = (double)gf[i * wo + q];
                    gi = srow;
                }
                divide_row(srow, gi, pw->size, 0.0, wo);
                double *mi = mid + i * w;
                spread_row(srow, pw, mi);
                divide_row(mi, mi, NULL, ph->size[i], w);
            }
            spread_rows(mid, w, ph, out); /* H stage */
        } else {
            double *sc = j->scratch, *mid = j->scratch + ho * wo;
            /* H stage: sc = g / hsize (per row), mid = row spread of sc. */
            for (Py_ssize_t i = 0; i < ho; i++) {
                double *si = sc + i * wo;
                const double *gi = gd + i * wo;
                if (j->g_f32) {
                    for (Py_ssize_t q = 0; q < wo; q++)
                        si[q] = (double)gf[i * wo + q];
                    gi = si;
                }
                divide_row(si, gi, NULL, ph->size[i], wo);
            }
            spread_rows(sc, wo, ph, mid);
            /* W stage: scale the stored intermediate by wsize, then spread each row. */
            for (Py_ssize_t p = 0; p < h; p++) {
                double *m = mid + p * wo;
                divide_row(m, m, pw->size, 0.0, wo);
                spread_row(m, pw, out + p * w);
            }
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
        pool_workers++;
    }
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
    double *hsize = NULL, *wsize = NULL, *scratch = NULL;
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
    axis_plan ph = {ho, h, bufs[2].buf, bufs[3].buf, NULL};
    axis_plan pw = {wo, w, bufs[5].buf, bufs[6].buf, NULL};
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
    hsize = PyMem_Malloc((size_t)ho * sizeof(double));
    wsize = PyMem_Malloc((size_t)wo * sizeof(double));
    if (!hsize || !wsize) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *hs = bufs[4].buf, *ws = bufs[7].buf;
    for (Py_ssize_t i = 0; i < ho; i++)
        hsize[i] = (double)hs[i];
    for (Py_ssize_t i = 0; i < wo; i++)
        wsize[i] = (double)ws[i];
    ph.size = hsize;
    pw.size = wsize;

    if (threads < 1)
        threads = 1;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > rows)
        threads = rows > 0 ? (int)rows : 1;
#if !SPREAD_HAVE_THREADS
    threads = 1;
#endif
    Py_ssize_t per = scratch_elems(&ph, &pw, w_first);
    scratch = PyMem_RawMalloc((size_t)(per * threads + 1) * sizeof(double));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    job jobs[MAX_THREADS];
    Py_ssize_t next = 0;
    /* Blocks small enough to balance (about 8 per thread), large enough to claim rarely. */
    Py_ssize_t block = rows / (8 * threads);
    if (block < 1)
        block = 1;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){bufs[0].buf, bufs[0].itemsize == 4, bufs[1].buf, ph, pw, w_first,
                        rows, block, &next, scratch + per * t};
    }
    Py_BEGIN_ALLOW_THREADS
    run_jobs(jobs, threads);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyMem_RawFree(scratch);
    PyMem_Free(hsize);
    PyMem_Free(wsize);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&bufs[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"backward_block", backward_block, METH_VARARGS,
     "backward_block(g, out, h_lo, h_count, h_size, w_lo, w_count, w_size, rows, "
     "w_first, threads)\n\n"
     "Backward of adaptive average pooling 2D on a C-contiguous float64 or float32 "
     "block g (rows, Ho, Wo) into float64 out (rows, H, W), with the numpy path's exact arithmetic.\n"
     "*_lo / *_count: int64 first window and window count of each position; *_size: "
     "int64 window sizes. w_first: spread along W first. threads: row-parallel threads "
     "(the result does not depend on it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aclcheck._spread",
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

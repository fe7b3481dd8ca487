/* Reusable memory for large reference results (aclcheck.reference).
 *
 * Why: a fresh result of tens of MB is mapped from the kernel and page-faulted on first
 * write, and faulting (the kernel zeroing every page) cost 2-4x the whole computation of
 * the reference (51 MB: ~3.5 ms of faults against ~1 ms of arithmetic on a 2-core VM).
 * The tool computes result after result (a golden per case), so memory freed by one
 * result is kept here and handed to the next one of a similar size, already mapped.
 *
 * How: `empty(nbytes)` returns a Block, a minimal object exporting a writable buffer;
 * numpy wraps it (np.frombuffer) and every array or view made from it keeps the Block
 * alive. When the last one goes, the Block's memory comes back to a small cache instead
 * of the OS. The cache holds at most `limit` bytes in at most CACHE_SLOTS blocks; a block
 * is reused for a request only when the request is at least half its size. The contents
 * of a reused block are stale: callers write every element (as after np.empty).
 *
 * Blocks are mmap-ed with MADV_HUGEPAGE where Linux offers it (as numpy does for its own
 * large arrays), or malloc-ed elsewhere. Every entry point runs with the GIL held; a
 * mutex guards the cache all the same.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <sys/mman.h>
#define RB_MMAP 1
#else
#define RB_MMAP 0
#endif

#define CACHE_SLOTS 8

typedef struct {
    void *ptr;
    size_t size;
} region;

static region cache[CACHE_SLOTS];
static int cache_used = 0;
static size_t cache_bytes = 0;
static size_t cache_limit = (size_t)512 << 20;
static unsigned long long hits = 0, misses = 0;
#if RB_MMAP
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&cache_mu)
#define UNLOCK() pthread_mutex_unlock(&cache_mu)
#else
#define LOCK() ((void)0)
#define UNLOCK() ((void)0)
#endif

static void *map_region(size_t size)
{
#if RB_MMAP
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    return p;
#else
    return malloc(size);
#endif
}

static void unmap_region(void *p, size_t size)
{
#if RB_MMAP
    munmap(p, size);
#else
    (void)size;
    free(p);
#endif
}

/* Drop slot i, keeping the others in age order (oldest first). Lock held. */
static void remove_slot_locked(int i)
{
    memmove(cache + i, cache + i + 1, (size_t)(cache_used - i - 1) * sizeof(region));
    cache_used--;
}

/* Take the oldest regions out of the cache until `room` more bytes fit under the limit
 * (and, with `slot`, a free slot exists); returns how many went to `out`. Lock held. */
static int evict_locked(size_t room, int slot, region *out)
{
    int n = 0;
    while (cache_used > 0 &&
           ((slot && cache_used == CACHE_SLOTS) || cache_bytes + room > cache_limit)) {
        out[n++] = cache[0];
        cache_bytes -= cache[0].size;
        remove_slot_locked(0);
    }
    return n;
}

/* A cached region of at least `size` bytes and at most twice that (the smallest such),
 * taken out of the cache; {NULL, 0} when there is none. */
static region take_cached(size_t size)
{
    region r = {NULL, 0};
    int best = -1;
    LOCK();
    for (int i = 0; i < cache_used; i++) {
        size_t s = cache[i].size;
        if (s >= size && s / 2 <= size && (best < 0 || s < cache[best].size))
            best = i;
    }
    if (best >= 0) {
        r = cache[best];
        cache_bytes -= r.size;
        remove_slot_locked(best);
    }
    UNLOCK();
    return r;
}

/* Keep a freed region for reuse, evicting the oldest ones to make room; a region larger
 * than the limit goes back to the OS. */
static void give_back(region r)
{
    region evicted[CACHE_SLOTS + 1];
    int n_evicted = 0;
    LOCK();
    if (r.size > cache_limit) {
        evicted[n_evicted++] = r;
    } else {
        n_evicted = evict_locked(r.size, 1, evicted);
        cache[cache_used++] = r;
        cache_bytes += r.size;
    }
    UNLOCK();
    for (int i = 0; i < n_evicted; i++)
        unmap_region(evicted[i].ptr, evicted[i].size);
}

/* A non-negative size argument (at least `min`), or -1 with an exception set. */
static Py_ssize_t size_arg(PyObject *arg, const char *what, Py_ssize_t min)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return -1;
    if (n < min) {
        PyErr_Format(PyExc_ValueError, "%s must be >= %zd", what, min);
        return -1;
    }
    return n;
}

typedef struct {
    PyObject_HEAD
    void *ptr;
    size_t size;
} Block;

static void block_dealloc(Block *self)
{
    if (self->ptr)
        give_back((region){self->ptr, self->size});
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int block_getbuffer(Block *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->ptr, (Py_ssize_t)self->size, 0,
                             flags);
}

static PyBufferProcs block_as_buffer = {(getbufferproc)block_getbuffer, NULL};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aclcheck._resultbuf.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of one large result; returns to the cache when freed.",
};

static PyObject *rb_empty(PyObject *mod, PyObject *arg)
{
    (void)mod;
    Py_ssize_t n = size_arg(arg, "nbytes", 1);
    if (n < 0)
        return NULL;
    region r = take_cached((size_t)n); /* the block keeps the whole region, for give_back */
    if (r.ptr) {
        hits++;
    } else {
        misses++;
        r.size = (size_t)n;
        r.ptr = map_region(r.size);
        if (!r.ptr)
            return PyErr_NoMemory();
    }
    Block *b = PyObject_New(Block, &BlockType);
    if (!b) {
        give_back(r);
        return NULL;
    }
    b->ptr = r.ptr;
    b->size = r.size;
    return (PyObject *)b;
}

static PyObject *rb_set_limit(PyObject *mod, PyObject *arg)
{
    (void)mod;
    Py_ssize_t n = size_arg(arg, "limit", 0);
    if (n < 0)
        return NULL;
    region evicted[CACHE_SLOTS];
    LOCK();
    cache_limit = (size_t)n;
    int n_evicted = evict_locked(0, 0, evicted);
    UNLOCK();
    for (int i = 0; i < n_evicted; i++)
        unmap_region(evicted[i].ptr, evicted[i].size);
    Py_RETURN_NONE;
}

static PyObject *rb_stats(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    LOCK();
    PyObject *d = Py_BuildValue("{s:i,s:n,s:n,s:K,s:K}", "blocks", cache_used, "bytes",
                                (Py_ssize_t)cache_bytes, "limit", (Py_ssize_t)cache_limit,
                                "hits", hits, "misses", misses);
    UNLOCK();
    return d;
}

static PyMethodDef methods[] = {
    {"empty", rb_empty, METH_O,
     "empty(nbytes) -> Block: at least nbytes of writable, uninitialized memory (a buffer), "
     "reused from the cache when a freed block of a similar size is there."},
    {"set_limit", rb_set_limit, METH_O,
     "set_limit(nbytes): the most freed memory the cache keeps (0: none); evicts now."},
    {"stats", rb_stats, METH_NOARGS,
     "stats() -> {'blocks', 'bytes', 'limit', 'hits', 'misses'}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aclcheck._resultbuf",
    "Reusable memory for large reference results.", -1, methods,
};

PyMODINIT_FUNC PyInit__resultbuf(void)
{
    if (PyType_Ready(&BlockType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&BlockType);
    if (PyModule_AddObject(m, "Block", (PyObject *)&BlockType) < 0) {
        Py_DECREF(&BlockType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

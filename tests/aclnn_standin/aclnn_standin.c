/*
 * A stand-in for the CANN libraries that aclnnAdaptiveAvgPool2dBackward,
 * aclnnAdaptiveAvgPool3dBackward and aclnnAdaptiveMaxPool2dBackward need, so the
 * `--impl aclnn` adapter can be tested on machines without an NPU.
 *
 * One file, built three times (see tests/test_aclnn.py):
 *   cc -shared -fPIC -O2 -Wl,-z,now -DSTANDIN_ACL      -o libascendcl.so aclnn_standin.c -lm
 *   cc -shared -fPIC -O2 -Wl,-z,now -DSTANDIN_NNOPBASE -o libnnopbase.so aclnn_standin.c -lm
 *   cc -shared -fPIC -O2 -Wl,-z,now -DSTANDIN_OPAPI    -o libopapi.so    aclnn_standin.c -lm
 * libnnopbase.so and libopapi.so use symbols of libascendcl.so without linking to it, and
 * are bound at load time (-z now): loading them before libascendcl.so, or without
 * RTLD_GLOBAL, fails like a real CANN install set up wrongly.
 *
 * "Device" memory is host memory, tracked so that frees and copies of unknown pointers
 * fail. The first phase validates like contract.md section 5 (statuses 161001 / 161002,
 * dtype support by the product of the SoC name), for the 3D operator like contract-3d.md
 * section 5 (the vendor's order: dims, dtypes by SoC and output size, formats, the
 * training 1x1x1 rule; 561103 where the SoC has no non-global kernel); the second
 * computes the backward in double and rounds once to the output dtype, reading every
 * tensor through its strides and storage offset. The max-pool operator follows its spec
 * (docs/contract-maxpool.md): checks in the A2/A3 order, then the
 * A2/A3 kernels' arithmetic (divisible calls copy each in-window gradient, the others add
 * in FLOAT32 and round once), self's values never read.
 *
 * Environment (read at every call, so one loaded copy serves several tests):
 *   ACLCHECK_STANDIN_LOG  append one JSON line per API call here (tensor geometry included)
 *   ACLCHECK_STANDIN_SOC  what aclrtGetSocName returns (default Ascend910B1)
 *   ACLCHECK_STANDIN_BUG  ignore_strides: read gradOutput as if contiguous;
 *                         accept_nc_mismatch: skip the N/C checks of rule 3
 *                         (and compute nothing when they differ: no out-of-bounds reads);
 *                         narrow_accumulate: the max-pool operator's non-divisible sums
 *                         round to FLOAT16/BFLOAT16 after every add (PyTorch CPU's way)
 */

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS 8

typedef struct aclTensor {
    int64_t dims[MAX_DIMS];
    uint64_t ndim;
    int dtype;
    int64_t strides[MAX_DIMS];
    int64_t offset;
    int format;
    int64_t storage[MAX_DIMS];
    uint64_t nstorage;
    void *data;
} aclTensor;

/* -- shared between the three libraries (defined in libascendcl.so) -------------------- */

void standin_log(const char *fmt, ...);
void standin_set_error(const char *fmt, ...);
const char *aclrtGetSocName(void);

#if defined(STANDIN_ACL)

#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_BAD_ALLOC 200000
#define MAX_ALLOCS 4096

static int g_initialized = 0;
static int g_device = -1;
static char g_error[1024];
static char g_error_out[1024];
static struct { char *ptr; size_t size; } g_allocs[MAX_ALLOCS];

void standin_log(const char *fmt, ...) {
    const char *path = getenv("ACLCHECK_STANDIN_LOG");
    if (path == NULL || *path == '\0') return;
    FILE *f = fopen(path, "a");
    if (f == NULL) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

void standin_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

/* The allocation holding [p, p + n), or -1. */
static int find_alloc(const void *p, size_t n) {
    const char *c = (const char *)p;
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (g_allocs[i].ptr != NULL && c >= g_allocs[i].ptr
            && c + n <= g_allocs[i].ptr + g_allocs[i].size) {
            return i;
        }
    }
    return -1;
}

int aclInit(const char *config) {
    standin_log("{\"call\":\"aclInit\",\"config\":%s}", config ? "\"set\"" : "null");
    if (g_initialized) return ACL_ERROR_REPEAT_INITIALIZE;
    g_initialized = 1;
    return 0;
}

int aclFinalize(void) {
    standin_log("{\"call\":\"aclFinalize\"}");
    if (!g_initialized) return ACL_ERROR_REPEAT_FINALIZE;
    g_initialized = 0;
    return 0;
}

int aclrtSetDevice(int32_t device) {
    standin_log("{\"call\":\"aclrtSetDevice\",\"device\":%d}", device);
    if (!g_initialized || device != 0) return ACL_ERROR_RT_INVALID_DEVICEID;
    g_device = device;
    return 0;
}

int aclrtResetDevice(int32_t device) {
    standin_log("{\"call\":\"aclrtResetDevice\",\"device\":%d}", device);
    if (device != g_device) return ACL_ERROR_RT_INVALID_DEVICEID;
    g_device = -1;
    return 0;
}

static int g_stream_token;

int aclrtCreateStream(void **stream) {
    standin_log("{\"call\":\"aclrtCreateStream\"}");
    if (stream == NULL || g_device < 0) return ACL_ERROR_INVALID_PARAM;
    *stream = &g_stream_token;
    return 0;
}

int aclrtDestroyStream(void *stream) {
    standin_log("{\"call\":\"aclrtDestroyStream\",\"ok\":%d}", stream == &g_stream_token);
    return stream == &g_stream_token ? 0 : ACL_ERROR_INVALID_PARAM;
}

int aclrtSynchronizeStream(void *stream) {
    standin_log("{\"call\":\"aclrtSynchronizeStream\",\"ok\":%d}", stream == &g_stream_token);
    return stream == &g_stream_token ? 0 : ACL_ERROR_INVALID_PARAM;
}

int aclrtMalloc(void **ptr, size_t size, int policy) {
    if (ptr == NULL || size == 0 || g_device < 0) {
        standin_log("{\"call\":\"aclrtMalloc\",\"size\":%zu,\"status\":%d}", size,
                    ACL_ERROR_INVALID_PARAM);
        return ACL_ERROR_INVALID_PARAM;
    }
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (g_allocs[i].ptr == NULL) {
            char *p = malloc(size);
            if (p == NULL) return ACL_ERROR_BAD_ALLOC;
            memset(p, 0xA5, size); /* device memory is not zeroed */
            g_allocs[i].ptr = p;
            g_allocs[i].size = size;
            *ptr = p;
            standin_log("{\"call\":\"aclrtMalloc\",\"size\":%zu,\"policy\":%d,"
                        "\"ptr\":%llu,\"status\":0}", size, policy,
                        (unsigned long long)(uintptr_t)p);
            return 0;
        }
    }
    return ACL_ERROR_BAD_ALLOC;
}

int aclrtFree(void *ptr) {
    standin_log("{\"call\":\"aclrtFree\",\"ptr\":%llu}", (unsigned long long)(uintptr_t)ptr);
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (ptr != NULL && g_allocs[i].ptr == ptr) {
            free(g_allocs[i].ptr);
            g_allocs[i].ptr = NULL;
            g_allocs[i].size = 0;
            return 0;
        }
    }
    return ACL_ERROR_INVALID_PARAM;
}

/* kind: 0 host->host, 1 host->device, 2 device->host, 3 device->device */
int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
    standin_log("{\"call\":\"aclrtMemcpy\",\"dst\":%llu,\"src\":%llu,\"count\":%zu,"
                "\"kind\":%d}", (unsigned long long)(uintptr_t)dst,
                (unsigned long long)(uintptr_t)src, count, kind);
    if (dst == NULL || src == NULL || count > destMax || kind < 0 || kind > 3) {
        return ACL_ERROR_INVALID_PARAM;
    }
    int dst_dev = find_alloc(dst, count) >= 0, src_dev = find_alloc(src, count) >= 0;
    int want_dst = kind == 1 || kind == 3, want_src = kind == 2 || kind == 3;
    if (dst_dev != want_dst || src_dev != want_src) return ACL_ERROR_INVALID_PARAM;
    memcpy(dst, src, count);
    return 0;
}

const char *aclGetRecentErrMsg(void) {
    if (g_error[0] == '\0') return NULL;
    memcpy(g_error_out, g_error, sizeof g_error);
    g_error[0] = '\0';
    return g_error_out;
}

int aclrtCtxSetSysParamOpt(int opt, int64_t value) {
    standin_log("{\"call\":\"aclrtCtxSetSysParamOpt\",\"opt\":%d,\"value\":%lld}", opt,
                (long long)value);
    return g_device < 0 ? ACL_ERROR_INVALID_PARAM : 0;
}

const char *aclrtGetSocName(void) {
    const char *soc = getenv("ACLCHECK_STANDIN_SOC");
    return soc != NULL && *soc != '\0' ? soc : "Ascend910B1";
}

#endif /* STANDIN_ACL */

/* -- libnnopbase.so: tensors ----------------------------------------------------------- */

#if defined(STANDIN_NNOPBASE)

static void log_dims(char *buf, size_t n, const int64_t *d, uint64_t k) {
    size_t used = 0;
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (uint64_t i = 0; i < k && used < n; i++) {
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? "," : "",
                                 (long long)d[i]);
    }
    if (used < n) snprintf(buf + used, n - used, "]");
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int dataType,
                           const int64_t *stride, int64_t offset, int format,
                           const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
    if (viewDimsNum > MAX_DIMS || storageDimsNum > MAX_DIMS
        || (viewDimsNum > 0 && (viewDims == NULL || stride == NULL))
        || (storageDimsNum > 0 && storageDims == NULL)) {
        standin_log("{\"call\":\"aclCreateTensor\",\"error\":\"bad arguments\"}");
        return NULL;
    }
    aclTensor *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->ndim = viewDimsNum;
    t->nstorage = storageDimsNum;
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        t->dims[i] = viewDims[i];
        t->strides[i] = stride[i];
    }
    for (uint64_t i = 0; i < storageDimsNum; i++) t->storage[i] = storageDims[i];
    t->dtype = dataType;
    t->format = format;
    t->offset = offset;
    t->data = tensorData;
    char dims[256], strides[256], storage[256];
    log_dims(dims, sizeof dims, t->dims, t->ndim);
    log_dims(strides, sizeof strides, t->strides, t->ndim);
    log_dims(storage, sizeof storage, t->storage, t->nstorage);
    standin_log("{\"call\":\"aclCreateTensor\",\"tensor\":%llu,\"dims\":%s,\"strides\":%s,"
                "\"offset\":%lld,\"dtype\":%d,\"format\":%d,\"storage\":%s,\"data\":%llu}",
                (unsigned long long)(uintptr_t)t, dims, strides, (long long)offset, dataType,
                format, storage, (unsigned long long)(uintptr_t)tensorData);
    return t;
}

int aclDestroyTensor(const aclTensor *tensor) {
    standin_log("{\"call\":\"aclDestroyTensor\",\"tensor\":%llu}",
                (unsigned long long)(uintptr_t)tensor);
    free((void *)tensor);
    return 0;
}

#endif /* STANDIN_NNOPBASE */

/* -- libopapi.so: the operator --------------------------------------------------------- */

#if defined(STANDIN_OPAPI)

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001

enum { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_DOUBLE = 11, DT_BF16 = 27 };
enum { FMT_NC1HWC0 = 3, FMT_FRACTAL_Z = 4, FMT_FRACTAL_NZ = 29 };
#define WORKSPACE_BYTES 4096

typedef struct aclOpExecutor {
    const aclTensor *grad;
    const aclTensor *self;
    const aclTensor *indices; /* the max-pool operator only */
    aclTensor *out;
    uint64_t workspace;
    int compute; /* 0: nothing to do (empty tensors, undocumented shapes) */
    int ignore_strides;
    int op; /* 0: the 2D operator's executor, 3: the 3D operator's, 4: max-pool 2D's */
} aclOpExecutor;

static const char *bug(void) {
    const char *b = getenv("ACLCHECK_STANDIN_BUG");
    return b != NULL ? b : "";
}

static int64_t numel(const aclTensor *t) {
    int64_t n = 1;
    for (uint64_t i = 0; i < t->ndim; i++) n *= t->dims[i];
    return n;
}

static int same_dims(const aclTensor *a, const aclTensor *b, uint64_t k) {
    for (uint64_t i = 0; i < k; i++) {
        if (a->dims[i] != b->dims[i]) return 0;
    }
    return 1;
}

static int dtype_supported(int dtype) {
    const char *soc = aclrtGetSocName();
    /* A2, A3 and Ascend 950 compute bfloat16 (contract.md section 3) */
    int bf16 = strncmp(soc, "Ascend910B", 10) == 0 || strncmp(soc, "Ascend910_93", 12) == 0
               || strncmp(soc, "Ascend950", 9) == 0;
    return dtype == DT_FLOAT || dtype == DT_FLOAT16 || (bf16 && dtype == DT_BF16);
}

static int private_format(int f) {
    return f == FMT_NC1HWC0 || f == FMT_FRACTAL_Z || f == FMT_FRACTAL_NZ;
}

static int reject(int status, const char *what) {
    standin_set_error("EZ1001: [standin] aclnnAdaptiveAvgPool2dBackward: %s", what);
    return status;
}

/* contract.md section 5, in order */
static int validate(const aclTensor *g, const aclTensor *s, const aclTensor *o) {
    if (g == NULL || s == NULL || o == NULL) {
        return reject(ACLNN_ERR_PARAM_NULLPTR, "gradOutput, self or out is a null pointer");
    }
    if (g->ndim != s->ndim) return reject(ACLNN_ERR_PARAM_INVALID, "rank mismatch");
    if ((o->ndim != 3 && o->ndim != 4) || o->ndim != s->ndim) {
        return reject(ACLNN_ERR_PARAM_INVALID, "out rank must be 3 or 4 and equal self's");
    }
    if (strcmp(bug(), "accept_nc_mismatch") != 0) {
        uint64_t lead = s->ndim - 2;
        if (!same_dims(g, s, lead) || !same_dims(o, s, lead)) {
            return reject(ACLNN_ERR_PARAM_INVALID, "leading dims differ from self");
        }
    }
    if (!dtype_supported(s->dtype) || !dtype_supported(g->dtype)) {
        return reject(ACLNN_ERR_PARAM_INVALID, "dtype not supported on this SoC");
    }
    if (g->dtype != s->dtype) return reject(ACLNN_ERR_PARAM_INVALID, "dtype mismatch");
    if (private_format(g->format) || private_format(s->format) || private_format(o->format)) {
        return reject(ACLNN_ERR_PARAM_INVALID, "private format");
    }
    if (g->format != s->format) return reject(ACLNN_ERR_PARAM_INVALID, "format mismatch");
    return ACLNN_SUCCESS;
}

static unsigned long long addr(const void *p) { return (unsigned long long)(uintptr_t)p; }

int aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                   const aclTensor *self, aclTensor *out,
                                                   uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    int status = validate(gradOutput, self, out);
    if (status == ACLNN_SUCCESS && (workspaceSize == NULL || executor == NULL)) {
        status = reject(ACLNN_ERR_PARAM_NULLPTR, "workspaceSize or executor is null");
    }
    aclOpExecutor *ex = NULL;
    if (status == ACLNN_SUCCESS) {
        ex = calloc(1, sizeof *ex);
        if (ex == NULL) return reject(ACLNN_ERR_RUNTIME_ERROR, "out of memory");
        ex->grad = gradOutput;
        ex->self = self;
        ex->out = out;
        uint64_t lead = self->ndim - 2;
        int empty = numel(gradOutput) == 0 || numel(self) == 0 || numel(out) == 0;
        /* undocumented calls are accepted; compute only where it is safe */
        int safe = same_dims(out, self, out->ndim) && out->dtype == self->dtype
                   && same_dims(gradOutput, self, lead);
        ex->compute = !empty && safe;
        ex->workspace = empty ? 0 : WORKSPACE_BYTES;
        ex->ignore_strides = strcmp(bug(), "ignore_strides") == 0;
        *workspaceSize = ex->workspace;
        *executor = ex;
    }
    standin_log("{\"call\":\"aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize\","
                "\"grad_output\":%llu,\"self\":%llu,\"out\":%llu,\"status\":%d,"
                "\"workspace\":%llu}", addr(gradOutput), addr(self), addr(out), status,
                (unsigned long long)(ex ? ex->workspace : 0));
    return status;
}

/* -- number formats: decode to double, round once (ties to even) ---------------------- */

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0) v = ldexp((double)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexp((double)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_to_double(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

/* x rounded to nearest-even in a binary format with p significand bits, normal
 * exponents emin..emax (subnormals below), overflowing to infinity. */
static double round_format(double x, int p, int emin, int emax) {
    if (isnan(x) || isinf(x) || x == 0.0) return x;
    double a = fabs(x);
    int e;
    frexp(a, &e);
    int E = e - 1 < emin ? emin : e - 1;
    double r = ldexp(nearbyint(ldexp(a, p - 1 - E)), E - p + 1);
    if (r > ldexp(2.0 - ldexp(1.0, 1 - p), emax)) r = INFINITY;
    return copysign(r, x);
}

static uint16_t double_to_half(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return 0x7e00;
    double r = fabs(round_format(x, 11, -14, 15));
    if (isinf(r)) return sign | 0x7c00;
    if (r < ldexp(1.0, -14)) return sign | (uint16_t)ldexp(r, 24);
    int e;
    frexp(r, &e);
    uint16_t mant = (uint16_t)(ldexp(r, 11 - e) - 1024.0);
    return sign | (uint16_t)((e - 1 + 15) << 10) | mant;
}

static uint16_t double_to_bf16(double x) {
    if (isnan(x)) return signbit(x) ? 0xffc0 : 0x7fc0;
    float f = (float)round_format(x, 8, -126, 127); /* exact in float */
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (uint16_t)(bits >> 16);
}

static size_t item_size(int dtype) {
    return dtype == DT_DOUBLE ? 8 : dtype == DT_FLOAT ? 4 : 2;
}

static double load(const aclTensor *t, int64_t index) {
    const char *p = (const char *)t->data + (size_t)index * item_size(t->dtype);
    if (t->dtype == DT_FLOAT) {
        float f;
        memcpy(&f, p, sizeof f);
        return (double)f;
    }
    if (t->dtype == DT_DOUBLE) {
        double d;
        memcpy(&d, p, sizeof d);
        return d;
    }
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return t->dtype == DT_FLOAT16 ? half_to_double(h) : bf16_to_double(h);
}

/* Atlas training/inference compute in saturation mode only (docs/contract.md section
 * 10): an overflowing result is the largest finite value of its sign, NaN is 0. The
 * A2/A3 and 950 SoCs default to inf-nan mode (IEEE). */
static int saturation_mode(void) {
    const char *soc = aclrtGetSocName();
    return !(strncmp(soc, "Ascend910B", 10) == 0 || strncmp(soc, "Ascend910_93", 12) == 0
             || strncmp(soc, "Ascend950", 9) == 0);
}

static void store(aclTensor *t, int64_t index, double v) {
    char *p = (char *)t->data + (size_t)index * item_size(t->dtype);
    int sat = saturation_mode();
    if (sat && isnan(v)) v = 0.0;
    if (t->dtype == DT_FLOAT) {
        float f = (float)v;
        if (sat && isinf(f)) f = copysignf(FLT_MAX, f);
        memcpy(p, &f, sizeof f);
        return;
    }
    if (t->dtype == DT_DOUBLE) {
        memcpy(p, &v, sizeof v);
        return;
    }
    uint16_t h = t->dtype == DT_FLOAT16 ? double_to_half(v) : double_to_bf16(v);
    if (sat && t->dtype == DT_FLOAT16 && (h & 0x7fff) == 0x7c00) h = (h & 0x8000) | 0x7bff;
    if (sat && t->dtype != DT_FLOAT16 && (h & 0x7fff) == 0x7f80) h = (h & 0x8000) | 0x7f7f;
    memcpy(p, &h, sizeof h);
}

static int64_t win_start(int64_t i, int64_t out, int64_t in) {
    return (i / out) * in + ((i % out) * in) / out;
}

static int64_t win_end(int64_t i, int64_t out, int64_t in) {
    return 1 + ((i + 1) * in - 1) / out;
}

/* Element index (storage offset + dot(index, strides)) of the `flat`-th element of the
 * leading dims and (h, w). */
static int64_t element(const aclTensor *t, int64_t flat, int64_t h, int64_t w, int contig) {
    int r = (int)t->ndim;
    int64_t strides[MAX_DIMS] = {0};
    if (contig) {
        int64_t acc = 1;
        for (int d = r - 1; d >= 0; d--) {
            strides[d] = acc;
            acc *= t->dims[d];
        }
    } else {
        memcpy(strides, t->strides, sizeof strides);
    }
    int64_t index = (contig ? 0 : t->offset) + h * strides[r - 2] + w * strides[r - 1];
    for (int d = r - 3; d >= 0; d--) {
        index += (flat % t->dims[d]) * strides[d];
        flat /= t->dims[d];
    }
    return index;
}

static void backward(const aclOpExecutor *ex) {
    const aclTensor *g = ex->grad;
    aclTensor *o = ex->out;
    int r = (int)o->ndim;
    int64_t ho = g->dims[r - 2], wo = g->dims[r - 1];
    int64_t h = o->dims[r - 2], w = o->dims[r - 1];
    int64_t planes = numel(o) / (h * w);
    double *acc = malloc((size_t)(h * w) * sizeof *acc);
    if (acc == NULL) return;
    for (int64_t p = 0; p < planes; p++) {
        for (int64_t k = 0; k < h * w; k++) acc[k] = 0.0;
        for (int64_t i = 0; i < ho; i++) {
            int64_t hs = win_start(i, ho, h), he = win_end(i, ho, h);
            for (int64_t j = 0; j < wo; j++) {
                int64_t ws = win_start(j, wo, w), we = win_end(j, wo, w);
                double v = load(g, element(g, p, i, j, ex->ignore_strides))
                           / (double)((he - hs) * (we - ws));
                for (int64_t y = hs; y < he; y++) {
                    for (int64_t x = ws; x < we; x++) acc[y * w + x] += v;
                }
            }
        }
        for (int64_t y = 0; y < h; y++) {
            for (int64_t x = 0; x < w; x++) store(o, element(o, p, y, x, 0), acc[y * w + x]);
        }
    }
    free(acc);
}

int aclnnAdaptiveAvgPool2dBackward(void *workspace, uint64_t workspaceSize,
                                   aclOpExecutor *executor, void *stream) {
    int status = ACLNN_SUCCESS;
    if (executor == NULL) {
        status = reject(ACLNN_ERR_PARAM_NULLPTR, "executor is null");
    } else if (executor->op != 0) {
        status = reject(ACLNN_ERR_PARAM_INVALID, "executor of another operator");
    } else if (executor->workspace > 0 && (workspace == NULL
                                           || workspaceSize < executor->workspace)) {
        status = reject(ACLNN_ERR_PARAM_INVALID, "workspace too small");
    } else if (stream == NULL) {
        status = reject(ACLNN_ERR_PARAM_NULLPTR, "stream is null");
    } else {
        if (workspaceSize > 0) memset(workspace, 0, (size_t)workspaceSize);
        if (executor->compute) backward(executor);
    }
    standin_log("{\"call\":\"aclnnAdaptiveAvgPool2dBackward\",\"workspace\":%llu,"
                "\"workspace_size\":%llu,\"stream\":%llu,\"status\":%d,\"computed\":%d}",
                addr(workspace), (unsigned long long)workspaceSize, addr(stream), status,
                executor ? executor->compute : 0);
    if (executor != NULL && executor->op == 0) free(executor); /* single-use */
    return status;
}

/* -- aclnnAdaptiveAvgPool3dBackward --------------------------------------------------- */

#define ACLNN_ERR_INNER_NULLPTR 561103
enum { FMT_NDC1HWC0 = 32, FMT_FRACTAL_Z_3D = 33 };

static int private_format_3d(int f) {
    return private_format(f) || f == FMT_NDC1HWC0 || f == FMT_FRACTAL_Z_3D;
}

static int reject3(int status, const char *what) {
    standin_set_error("EZ1001: [standin] aclnnAdaptiveAvgPool3dBackward: %s", what);
    return status;
}

static int soc_is(const char *prefix) {
    return strncmp(aclrtGetSocName(), prefix, strlen(prefix)) == 0;
}

/* A2 / A3 / Ascend 950 (the vendor's IsRegbase): the kernel path with bfloat16 */
static int soc_kernel(void) {
    return soc_is("Ascend910B") || soc_is("Ascend910_93") || soc_is("Ascend950");
}

/* Atlas training: Ascend910 but not 910B / 910_93 */
static int soc_training(void) { return soc_is("Ascend910") && !soc_kernel(); }

static int is_global(const aclTensor *g) {
    uint64_t r = g->ndim;
    return g->dims[r - 3] == 1 && g->dims[r - 2] == 1 && g->dims[r - 1] == 1;
}

/* CheckDtypeValid: the list depends on the SoC and on gradOutput's (Do, Ho, Wo) */
static int dtype_listed_3d(int dtype, int global) {
    if (soc_kernel()) {
        return dtype == DT_FLOAT || dtype == DT_FLOAT16 || dtype == DT_BF16
               || (global && dtype == DT_DOUBLE);
    }
    return dtype == DT_FLOAT || dtype == DT_FLOAT16 || dtype == DT_DOUBLE;
}

/* contract-3d.md section 5: the vendor's op_api checks, in its order */
static int validate_3d(const aclTensor *g, const aclTensor *s, const aclTensor *o) {
    if (g == NULL || s == NULL || o == NULL) {
        return reject3(ACLNN_ERR_PARAM_NULLPTR, "gradOutput, self or out is a null pointer");
    }
    uint64_t r = s->ndim;
    if (r != 4 && r != 5) return reject3(ACLNN_ERR_PARAM_INVALID, "self must be 4D or 5D");
    if (g->ndim != r || o->ndim != r) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "gradOutput and out rank must equal self's");
    }
    for (uint64_t i = 0; i < r; i++) {
        if (s->dims[i] <= 0) return reject3(ACLNN_ERR_PARAM_INVALID, "non-empty self expected");
        if (o->dims[i] != s->dims[i]) {
            return reject3(ACLNN_ERR_PARAM_INVALID, "out shape must equal self's");
        }
    }
    if (strcmp(bug(), "accept_nc_mismatch") != 0 && !same_dims(g, s, r - 3)) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "leading dims of gradOutput differ from self");
    }
    for (uint64_t i = r - 3; i < r; i++) {
        if (g->dims[i] <= 0) return reject3(ACLNN_ERR_PARAM_INVALID, "empty output size");
    }
    int global = is_global(g);
    if (!dtype_listed_3d(g->dtype, global) || !dtype_listed_3d(s->dtype, global)) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "dtype not supported on this SoC");
    }
    if (g->dtype != s->dtype || s->dtype != o->dtype) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "dtype mismatch");
    }
    if (g->format != s->format || o->format != s->format) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "format mismatch");
    }
    if (private_format_3d(g->format)) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "Format only support NCDHW, ND");
    }
    if (!global && soc_training()) {
        return reject3(ACLNN_ERR_PARAM_INVALID, "only support D=1 && H=1 && W=1 on 910A");
    }
    if (!global && !soc_kernel()) {
        return reject3(ACLNN_ERR_INNER_NULLPTR, "no AdaptiveAvgPool3dGrad kernel for this SoC");
    }
    return ACLNN_SUCCESS;
}

int aclnnAdaptiveAvgPool3dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                   const aclTensor *self, aclTensor *out,
                                                   uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    int status = workspaceSize == NULL || executor == NULL
                     ? reject3(ACLNN_ERR_PARAM_NULLPTR, "workspaceSize or executor is null")
                     : validate_3d(gradOutput, self, out);
    aclOpExecutor *ex = NULL;
    if (status == ACLNN_SUCCESS) {
        ex = calloc(1, sizeof *ex);
        if (ex == NULL) return reject3(ACLNN_ERR_RUNTIME_ERROR, "out of memory");
        ex->grad = gradOutput;
        ex->self = self;
        ex->out = out;
        ex->op = 3;
        /* with the N/C checks skipped (a bug), compute only where it is safe */
        ex->compute = same_dims(gradOutput, self, self->ndim - 3);
        ex->workspace = WORKSPACE_BYTES;
        ex->ignore_strides = strcmp(bug(), "ignore_strides") == 0;
        *workspaceSize = ex->workspace;
        *executor = ex;
    }
    standin_log("{\"call\":\"aclnnAdaptiveAvgPool3dBackwardGetWorkspaceSize\","
                "\"grad_output\":%llu,\"self\":%llu,\"out\":%llu,\"status\":%d,"
                "\"workspace\":%llu}", addr(gradOutput), addr(self), addr(out), status,
                (unsigned long long)(ex ? ex->workspace : 0));
    return status;
}

/* Element index of the `flat`-th element of the leading dims and (d, h, w). */
static int64_t element3(const aclTensor *t, int64_t flat, int64_t d, int64_t h, int64_t w,
                        int contig) {
    int r = (int)t->ndim;
    int64_t strides[MAX_DIMS] = {0};
    if (contig) {
        int64_t acc = 1;
        for (int k = r - 1; k >= 0; k--) {
            strides[k] = acc;
            acc *= t->dims[k];
        }
    } else {
        memcpy(strides, t->strides, sizeof strides);
    }
    int64_t index = (contig ? 0 : t->offset) + d * strides[r - 3] + h * strides[r - 2]
                    + w * strides[r - 1];
    for (int k = r - 4; k >= 0; k--) {
        index += (flat % t->dims[k]) * strides[k];
        flat /= t->dims[k];
    }
    return index;
}

static void backward_3d(const aclOpExecutor *ex) {
    const aclTensor *g = ex->grad;
    aclTensor *o = ex->out;
    int r = (int)o->ndim;
    int64_t od = g->dims[r - 3], oh = g->dims[r - 2], ow = g->dims[r - 1];
    int64_t d = o->dims[r - 3], h = o->dims[r - 2], w = o->dims[r - 1];
    int64_t plane = d * h * w, planes = numel(o) / plane;
    double *acc = malloc((size_t)plane * sizeof *acc);
    if (acc == NULL) return;
    for (int64_t p = 0; p < planes; p++) {
        for (int64_t k = 0; k < plane; k++) acc[k] = 0.0;
        for (int64_t i = 0; i < od; i++) {
            int64_t ds = win_start(i, od, d), de = win_end(i, od, d);
            for (int64_t j = 0; j < oh; j++) {
                int64_t hs = win_start(j, oh, h), he = win_end(j, oh, h);
                for (int64_t m = 0; m < ow; m++) {
                    int64_t ws = win_start(m, ow, w), we = win_end(m, ow, w);
                    double v = load(g, element3(g, p, i, j, m, ex->ignore_strides))
                               / (double)((de - ds) * (he - hs) * (we - ws));
                    for (int64_t z = ds; z < de; z++) {
                        for (int64_t y = hs; y < he; y++) {
                            for (int64_t x = ws; x < we; x++) acc[(z * h + y) * w + x] += v;
                        }
                    }
                }
            }
        }
        for (int64_t z = 0; z < d; z++) {
            for (int64_t y = 0; y < h; y++) {
                for (int64_t x = 0; x < w; x++) {
                    store(o, element3(o, p, z, y, x, 0), acc[(z * h + y) * w + x]);
                }
            }
        }
    }
    free(acc);
}

int aclnnAdaptiveAvgPool3dBackward(void *workspace, uint64_t workspaceSize,
                                   aclOpExecutor *executor, void *stream) {
    int status = ACLNN_SUCCESS;
    if (executor == NULL) {
        status = reject3(ACLNN_ERR_PARAM_NULLPTR, "executor is null");
    } else if (executor->op != 3) {
        status = reject3(ACLNN_ERR_PARAM_INVALID, "executor of another operator");
    } else if (workspace == NULL || workspaceSize < executor->workspace) {
        status = reject3(ACLNN_ERR_PARAM_INVALID, "workspace too small");
    } else if (stream == NULL) {
        status = reject3(ACLNN_ERR_PARAM_NULLPTR, "stream is null");
    } else {
        memset(workspace, 0, (size_t)workspaceSize);
        if (executor->compute) backward_3d(executor);
    }
    standin_log("{\"call\":\"aclnnAdaptiveAvgPool3dBackward\",\"workspace\":%llu,"
                "\"workspace_size\":%llu,\"stream\":%llu,\"status\":%d,\"computed\":%d}",
                addr(workspace), (unsigned long long)workspaceSize, addr(stream), status,
                executor ? executor->compute : 0);
    if (executor != NULL && executor->op == 3) free(executor);
    return status;
}

/* -- aclnnAdaptiveMaxPool2dBackward --------------------------------------------------- */
/* docs/contract-maxpool.md (the contract of the
 * max-pool operator): the Atlas A2/A3 checks in the vendor's order, then its kernels'
 * arithmetic. Atlas training/inference have an empty dtype list (every non-null call is
 * 161002). Ascend 950 is not modelled: it gets the A2/A3 dtypes and arithmetic, without
 * the H*W size check. */

enum { DT_INT32 = 3, DT_INT64 = 9 };
#define OP_MAX2D 4
#define MAX_PLANE 2147483647LL /* H*W <= 2^31 - 1 */

static int rejectm(int status, const char *what) {
    standin_set_error("EZ1001: [standin] aclnnAdaptiveMaxPool2dBackward: %s", what);
    return status;
}

/* A2 / A3 / 950 list FLOAT32, FLOAT16, BFLOAT16; training and inference list nothing */
static int dtype_listed_max(int dtype) {
    return soc_kernel() && (dtype == DT_FLOAT || dtype == DT_FLOAT16 || dtype == DT_BF16);
}

/* the spec's status codes, in the implementation's order */
static int validate_max(const aclTensor *g, const aclTensor *s, const aclTensor *ix,
                        const aclTensor *o) {
    if (g == NULL || s == NULL || ix == NULL || o == NULL) {
        return rejectm(ACLNN_ERR_PARAM_NULLPTR,
                       "gradOutput, self, indices or gradInput is a null pointer");
    }
    if (g->dtype != s->dtype) return rejectm(ACLNN_ERR_PARAM_INVALID, "gradOutput dtype");
    if (o->dtype != s->dtype) return rejectm(ACLNN_ERR_PARAM_INVALID, "gradInput dtype");
    if (!dtype_listed_max(s->dtype)) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "dtype not supported on this SoC");
    }
    if (ix->dtype != DT_INT32 && ix->dtype != DT_INT64) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "indices must be INT32 or INT64");
    }
    if (g->ndim != s->ndim || ix->ndim != s->ndim || o->ndim != s->ndim) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "ranks differ");
    }
    if (!same_dims(ix, g, g->ndim)) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "indices shape must equal gradOutput's");
    }
    if (!same_dims(o, s, s->ndim)) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "gradInput shape must equal self's");
    }
    if (g->format != s->format || ix->format != s->format || o->format != s->format) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "format mismatch");
    }
    if (private_format_3d(s->format)) return rejectm(ACLNN_ERR_PARAM_INVALID, "private format");
    if (s->ndim != 3 && s->ndim != 4) return rejectm(ACLNN_ERR_PARAM_INVALID, "rank not 3 or 4");
    int64_t h = s->dims[s->ndim - 2], w = s->dims[s->ndim - 1];
    if (!soc_is("Ascend950") && h > 0 && w > 0 && h > MAX_PLANE / w) {
        return rejectm(ACLNN_ERR_PARAM_INVALID, "H*W exceeds 2^31 - 1");
    }
    return ACLNN_SUCCESS;
}

static int any_dim(const aclTensor *t, int zero) {
    for (uint64_t i = 0; i < t->ndim; i++) {
        if (zero ? t->dims[i] == 0 : t->dims[i] < 0) return 1;
    }
    return 0;
}

/* H % Ho == 0 and W % Wo == 0: MaxPool3DGradWithArgmax, one term per position */
static int divisible_max(const aclTensor *g, const aclTensor *s) {
    uint64_t r = s->ndim;
    return s->dims[r - 2] % g->dims[r - 2] == 0 && s->dims[r - 1] % g->dims[r - 1] == 0;
}

int aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize(const aclTensor *gradOutput,
                                                   const aclTensor *self,
                                                   const aclTensor *indices,
                                                   aclTensor *gradInput,
                                                   uint64_t *workspaceSize,
                                                   aclOpExecutor **executor) {
    int status = validate_max(gradOutput, self, indices, gradInput);
    if (status == ACLNN_SUCCESS && (workspaceSize == NULL || executor == NULL)) {
        status = rejectm(ACLNN_ERR_PARAM_NULLPTR, "workspaceSize or executor is null");
    }
    aclOpExecutor *ex = NULL;
    if (status == ACLNN_SUCCESS) {
        ex = calloc(1, sizeof *ex);
        if (ex == NULL) return rejectm(ACLNN_ERR_RUNTIME_ERROR, "out of memory");
        ex->grad = gradOutput;
        ex->self = self;
        ex->indices = indices;
        ex->out = gradInput;
        ex->op = OP_MAX2D;
        int empty = any_dim(gradOutput, 1) || any_dim(self, 1) || any_dim(indices, 1);
        /* unchecked: gradOutput's N, C against self's (the tilings refuse it later:
         * unspecified) and negative dims; accepted, nothing computed */
        int safe = !any_dim(gradOutput, 0) && !any_dim(self, 0)
                   && same_dims(gradOutput, self, self->ndim - 2);
        ex->compute = !empty && safe;
        ex->workspace = 0;
        if (!empty) {
            ex->workspace = WORKSPACE_BYTES;
            /* FLOAT16/BFLOAT16 non-divisible calls add in a FLOAT32 workspace */
            if (safe && self->dtype != DT_FLOAT && !divisible_max(gradOutput, self)) {
                ex->workspace += (uint64_t)numel(self) * 4;
            }
        }
        ex->ignore_strides = strcmp(bug(), "ignore_strides") == 0;
        *workspaceSize = ex->workspace;
        *executor = ex;
    }
    standin_log("{\"call\":\"aclnnAdaptiveMaxPool2dBackwardGetWorkspaceSize\","
                "\"grad_output\":%llu,\"self\":%llu,\"indices\":%llu,\"grad_input\":%llu,"
                "\"status\":%d,\"workspace\":%llu}", addr(gradOutput), addr(self),
                addr(indices), addr(gradInput), status,
                (unsigned long long)(ex ? ex->workspace : 0));
    return status;
}

/* An index as the kernels see it: INT64 is first cast to INT32 (wrap-around). */
static int32_t load_index(const aclTensor *t, int64_t index) {
    const char *p = (const char *)t->data + (size_t)index * (t->dtype == DT_INT64 ? 8 : 4);
    if (t->dtype == DT_INT64) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (int32_t)(uint32_t)(uint64_t)v;
    }
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void backward_max(const aclOpExecutor *ex) {
    const aclTensor *g = ex->grad, *ix = ex->indices;
    aclTensor *o = ex->out;
    int r = (int)o->ndim;
    int64_t ho = g->dims[r - 2], wo = g->dims[r - 1];
    int64_t h = o->dims[r - 2], w = o->dims[r - 1], plane = h * w;
    int64_t planes = numel(o) / plane;
    size_t size = item_size(o->dtype);
    int divisible = divisible_max(g, o);
    int narrow = strcmp(bug(), "narrow_accumulate") == 0;
    float *acc = divisible ? NULL : malloc((size_t)plane * sizeof *acc);
    if (!divisible && acc == NULL) return;
    for (int64_t p = 0; p < planes; p++) {
        if (divisible) {
            /* vector kernel: +0 everywhere, then each gradient copied as is to its index
             * when that lies in the cell's own window (dropped otherwise) */
            for (int64_t k = 0; k < plane; k++) store(o, element(o, p, k / w, k % w, 0), 0.0);
            for (int64_t i = 0; i < ho; i++) {
                int64_t hs = win_start(i, ho, h), he = win_end(i, ho, h);
                for (int64_t j = 0; j < wo; j++) {
                    int64_t ws = win_start(j, wo, w), we = win_end(j, wo, w);
                    int64_t at = load_index(ix, element(ix, p, i, j, 0));
                    if (at < 0 || at >= plane) continue;
                    int64_t y = at / w, x = at % w;
                    if (y < hs || y >= he || x < ws || x >= we) continue;
                    const char *src = (const char *)g->data
                        + (size_t)element(g, p, i, j, ex->ignore_strides) * size;
                    memcpy((char *)o->data + (size_t)element(o, p, y, x, 0) * size, src, size);
                }
            }
            continue;
        }
        /* adaptive kernel: FLOAT32 sums from +0 in row-major cell order, indices outside
         * the plane dropped, one round-to-nearest-even conversion at the end */
        for (int64_t k = 0; k < plane; k++) acc[k] = 0.0f;
        for (int64_t i = 0; i < ho; i++) {
            for (int64_t j = 0; j < wo; j++) {
                int64_t at = load_index(ix, element(ix, p, i, j, 0));
                if (at < 0 || at >= plane) continue;
                acc[at] += (float)load(g, element(g, p, i, j, ex->ignore_strides));
                if (narrow && o->dtype == DT_FLOAT16) {
                    acc[at] = (float)half_to_double(double_to_half(acc[at]));
                } else if (narrow && o->dtype == DT_BF16) {
                    acc[at] = (float)bf16_to_double(double_to_bf16(acc[at]));
                }
            }
        }
        for (int64_t k = 0; k < plane; k++) {
            store(o, element(o, p, k / w, k % w, 0), (double)acc[k]);
        }
    }
    free(acc);
}

int aclnnAdaptiveMaxPool2dBackward(void *workspace, uint64_t workspaceSize,
                                   aclOpExecutor *executor, void *stream) {
    int status = ACLNN_SUCCESS;
    if (executor == NULL) {
        status = rejectm(ACLNN_ERR_PARAM_NULLPTR, "executor is null");
    } else if (executor->op != OP_MAX2D) {
        status = rejectm(ACLNN_ERR_PARAM_INVALID, "executor of another operator");
    } else if (executor->workspace > 0 && (workspace == NULL
                                           || workspaceSize < executor->workspace)) {
        status = rejectm(ACLNN_ERR_PARAM_INVALID, "workspace too small");
    } else if (stream == NULL) {
        status = rejectm(ACLNN_ERR_PARAM_NULLPTR, "stream is null");
    } else {
        if (workspaceSize > 0) memset(workspace, 0, (size_t)workspaceSize);
        if (executor->compute) backward_max(executor);
    }
    standin_log("{\"call\":\"aclnnAdaptiveMaxPool2dBackward\",\"workspace\":%llu,"
                "\"workspace_size\":%llu,\"stream\":%llu,\"status\":%d,\"computed\":%d}",
                addr(workspace), (unsigned long long)workspaceSize, addr(stream), status,
                executor ? executor->compute : 0);
    if (executor != NULL && executor->op == OP_MAX2D) free(executor); /* single-use */
    return status;
}

#endif /* STANDIN_OPAPI */

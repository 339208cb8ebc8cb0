/*
 * dpstack._fused: the value-and-gradient pass of the logistic loss as one compiled loop.
 *
 * dpstack.solvers evaluates J(w) block by block with two BLAS products per block of rows
 * (X_b @ w, then r_b @ X_b while the block sits in cache) and a dozen numpy calls for the
 * loss in between; on one core that costs about two reads of X from memory. This loop takes
 * each row once: its margin (a dot product), its loss and residual, and its term of the
 * gradient while the row is still in L1, four rows at a time (AVX2 and FMA, with glibc's
 * vector exp and log1p from libmvec), so one evaluation costs about one read of X.
 *
 * It is optional. The extension is built when pip installs dpstack on x86-64 Linux with
 * glibc >= 2.35 and a C compiler; it is used when the CPU has AVX2 and FMA (supported()).
 * Otherwise, or with DPSTACK_FUSED=0, dpstack.solvers uses its numpy/BLAS pass, which
 * computes the same sums in another order (the two agree to about 1e-14 relative).
 *
 * The arithmetic is fixed by this file, not by the compiler's choices: explicit vector
 * intrinsics, a fixed order of every sum, no -ffast-math. Nothing here keeps state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define DPSTACK_FUSED_X86 1
#include <immintrin.h>
#include <math.h>

/* glibc's libmvec: exp and log1p of four doubles (AVX2), at most 4 ulp from the exact value. */
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_log1p(__m256d);

#define AVX2 __attribute__((target("avx2,fma")))

/* The sum of the four lanes in a fixed order: (l0 + l2) + (l1 + l3). */
AVX2 static inline double lanes_sum(__m256d v) {
    __m128d lo = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(lo, _mm_unpackhi_pd(lo, lo)));
}

/* sum += term with Kahan's compensation: low holds what the rounding of sum lost (sum − low is the sum). */
AVX2 static inline void kahan_add(__m256d *sum, __m256d *low, __m256d term) {
    __m256d corrected = _mm256_sub_pd(term, *low);
    __m256d next = _mm256_add_pd(*sum, corrected);
    *low = _mm256_sub_pd(_mm256_sub_pd(next, *sum), corrected);
    *sum = next;
}

/* x . w over k entries: two vector accumulators (eight lanes), then the tail. */
AVX2 static inline double dot(const double *x, const double *w, Py_ssize_t k) {
    __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
    Py_ssize_t j = 0;
    for (; j + 8 <= k; j += 8) {
        a = _mm256_fmadd_pd(_mm256_loadu_pd(x + j), _mm256_loadu_pd(w + j), a);
        b = _mm256_fmadd_pd(_mm256_loadu_pd(x + j + 4), _mm256_loadu_pd(w + j + 4), b);
    }
    if (j + 4 <= k) {
        a = _mm256_fmadd_pd(_mm256_loadu_pd(x + j), _mm256_loadu_pd(w + j), a);
        j += 4;
    }
    double s = lanes_sum(_mm256_add_pd(a, b));
    for (; j < k; j++) s = fma(x[j], w[j], s);
    return s;
}

/*
 * Rows 0..n-1 of the C-ordered n x k array X, labels sign (+1/-1), clipped rows rows[0..m-1]
 * (increasing) with factors fac, constant c added to every margin:
 *   m_i = y_i (f_i x_i.w + c),   loss += log(1 + e^{-m_i}) = log1p(e^{-|m_i|}) - min(m_i, 0),
 *   r_i = y_i / (1 + e^{m_i}),    r_sum += r_i,   grad -= f_i r_i x_i,
 * with f_i = 1 for rows that are not clipped; one e^{-|m_i|} gives both the loss and r_i.
 */
AVX2 static void logistic_rows(const double *X, Py_ssize_t n, Py_ssize_t k, const double *w, const int8_t *sign,
                               const int64_t *rows, const double *fac, Py_ssize_t m, double c, double *grad,
                               double *loss_out, double *r_sum_out) {
    const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0), sign_bit = _mm256_set1_pd(-0.0);
    /* Compensated (Kahan) sums per lane: J's value decides the solver's line searches down to a few
       ulps (64 eps (1 + |J|)), and a plain running sum of ten thousand positive losses drifts by more. */
    __m256d loss = zero, loss_low = zero, r_sum = zero, r_sum_low = zero;
    Py_ssize_t next = 0;
    double z[4], f[4], y[4], r[4];
    for (Py_ssize_t i = 0; i < n; i += 4) {
        Py_ssize_t t, count = n - i < 4 ? n - i : 4;
        for (t = 0; t < 4; t++) {
            if (t < count) {
                f[t] = 1.0;
                if (next < m && rows[next] == i + t) f[t] = fac[next++];
                z[t] = f[t] * dot(X + (i + t) * k, w, k) + c;
                y[t] = (double)sign[i + t];
            } else { /* past the last row: y = 0 makes r = 0, and the loss lane is masked */
                z[t] = 0.0;
                f[t] = 0.0;
                y[t] = 0.0;
            }
        }
        __m256d yv = _mm256_loadu_pd(y);
        __m256d mv = _mm256_mul_pd(_mm256_loadu_pd(z), yv);
        __m256d e = _ZGVdN4v_exp(_mm256_or_pd(mv, sign_bit)); /* e^{-|m|} */
        __m256d lv = _mm256_sub_pd(_ZGVdN4v_log1p(e), _mm256_min_pd(mv, zero));
        __m256d numerator = _mm256_blendv_pd(one, e, _mm256_cmp_pd(mv, zero, _CMP_GE_OQ));
        __m256d rv = _mm256_mul_pd(_mm256_div_pd(numerator, _mm256_add_pd(e, one)), yv);
        kahan_add(&loss, &loss_low, _mm256_and_pd(lv, _mm256_cmp_pd(yv, zero, _CMP_NEQ_OQ)));
        kahan_add(&r_sum, &r_sum_low, rv);
        _mm256_storeu_pd(r, _mm256_mul_pd(rv, _mm256_loadu_pd(f)));
        const double *x0 = X + i * k;
        if (count == 4) { /* grad -= r0 x0 + r1 x1 + r2 x2 + r3 x3, the four rows still in L1 */
            const double *x1 = x0 + k, *x2 = x1 + k, *x3 = x2 + k;
            __m256d r0 = _mm256_set1_pd(r[0]), r1 = _mm256_set1_pd(r[1]);
            __m256d r2 = _mm256_set1_pd(r[2]), r3 = _mm256_set1_pd(r[3]);
            Py_ssize_t j = 0;
            for (; j + 4 <= k; j += 4) {
                __m256d g = _mm256_loadu_pd(grad + j);
                g = _mm256_fnmadd_pd(r0, _mm256_loadu_pd(x0 + j), g);
                g = _mm256_fnmadd_pd(r1, _mm256_loadu_pd(x1 + j), g);
                g = _mm256_fnmadd_pd(r2, _mm256_loadu_pd(x2 + j), g);
                g = _mm256_fnmadd_pd(r3, _mm256_loadu_pd(x3 + j), g);
                _mm256_storeu_pd(grad + j, g);
            }
            for (; j < k; j++)
                grad[j] = fma(-r[3], x3[j], fma(-r[2], x2[j], fma(-r[1], x1[j], fma(-r[0], x0[j], grad[j]))));
        } else {
            for (t = 0; t < count; t++)
                for (Py_ssize_t j = 0; j < k; j++) grad[j] = fma(-r[t], x0[t * k + j], grad[j]);
        }
    }
    *loss_out = lanes_sum(_mm256_sub_pd(loss, loss_low));
    *r_sum_out = lanes_sum(_mm256_sub_pd(r_sum, r_sum_low));
}
#endif

static PyObject *fused_supported(PyObject *self, PyObject *unused) {
#ifdef DPSTACK_FUSED_X86
    __builtin_cpu_init();
    return PyBool_FromLong(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *fused_logistic_pass(PyObject *self, PyObject *args) {
    Py_buffer X, w, sign, rows, fac, grad;
    Py_ssize_t n, k;
    double c, loss = 0.0, r_sum = 0.0;
    /* y*: any contiguous buffer (read-only memory maps too); w*: a writable one */
    if (!PyArg_ParseTuple(args, "y*nny*y*y*y*dw*", &X, &n, &k, &w, &sign, &rows, &fac, &c, &grad)) return NULL;
    PyObject *out = NULL;
    if (n < 0 || k < 0 || X.len != n * k * (Py_ssize_t)sizeof(double) || w.len != k * (Py_ssize_t)sizeof(double) ||
        sign.len != n || grad.len != k * (Py_ssize_t)sizeof(double) || rows.len % 8 != 0 || fac.len != rows.len) {
        PyErr_SetString(PyExc_ValueError, "logistic_pass: the buffers' sizes do not match n and k");
    } else {
#ifdef DPSTACK_FUSED_X86
        Py_BEGIN_ALLOW_THREADS
        logistic_rows(X.buf, n, k, w.buf, sign.buf, rows.buf, fac.buf, rows.len / 8, c, grad.buf, &loss, &r_sum);
        Py_END_ALLOW_THREADS
        out = Py_BuildValue("dd", loss, r_sum);
#else
        PyErr_SetString(PyExc_RuntimeError, "logistic_pass: built without the x86-64 kernel");
#endif
    }
    PyBuffer_Release(&X);
    PyBuffer_Release(&w);
    PyBuffer_Release(&sign);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&fac);
    PyBuffer_Release(&grad);
    return out;
}

static PyMethodDef methods[] = {
    {"supported", fused_supported, METH_NOARGS, "supported() -> bool: this CPU has AVX2 and FMA."},
    {"logistic_pass", fused_logistic_pass, METH_VARARGS,
     "logistic_pass(X, n, k, w, sign, rows, factors, c, grad) -> (loss_sum, r_sum); subtracts sum_i f_i r_i x_i "
     "from grad in place. X: C-ordered float64 n x k; sign: int8 +-1; rows: int64 increasing; factors: float64."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fused", "The fused logistic value-and-gradient pass.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__fused(void) { return PyModule_Create(&module); }

/* Hand-written reference training step for the paper's MNIST CNN; see cnn_ref.h.
 *
 * Plain loops with the innermost loop over contiguous memory (so the compiler vectorises it),
 * fused bias/activation where it is natural, and nothing else: no blocking, no intrinsics,
 * no im2col. This is the C a careful programmer writes in an afternoon. It is compiled and
 * linked with the generated C's flags and declares the same vector expf (see below).
 */
#include "cnn_ref.h"

#include <math.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GLIBC__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* glibc's libmvec has a vector expf; declaring it (as glibc's headers do under -ffast-math)
 * lets the vectoriser use it. The library links -lmvec, like the generated C: both C versions
 * use the same libm. */
float expf(float) __attribute__((simd("notinbranch")));
#endif

/* per-thread workspace: a gradient accumulator and a loss sum, padded to a cache line */
typedef struct {
    cnnref_params acc;
    float loss;
    char pad[64 - (sizeof(cnnref_params) + sizeof(float)) % 64];
} thread_ws;

/* activations of one sample */
typedef struct {
    float c1[6][24][24];
    float s1[6][12][12];
    float c2[12][8][8];
    float s2[12 * 4 * 4];
    float r[10];
} acts;

size_t cnnref_workspace_size(int nthreads)
{
    return (size_t)(nthreads < 1 ? 1 : nthreads) * sizeof(thread_ws);
}

static inline float logistic(float x) { return 1.0f / (1.0f + expf(-x)); }

static void forward(const cnnref_params *restrict w, const float (*restrict inp)[28],
                    acts *restrict a)
{
    const float (*k1)[5][5] = (const float (*)[5][5])w->k1;
    const float (*k2)[6][5][5] = (const float (*)[6][5][5])w->k2;
    const float (*fc)[12 * 4 * 4] = (const float (*)[12 * 4 * 4])w->fc;

    /* c1 = logistic(conv(inp, k1) + b1) */
    for (int o = 0; o < 6; o++) {
        for (int y = 0; y < 24; y++) {
            float row[24];
            for (int x = 0; x < 24; x++) row[x] = w->b1[o];
            for (int u = 0; u < 5; u++)
                for (int v = 0; v < 5; v++) {
                    const float k = k1[o][u][v];
                    for (int x = 0; x < 24; x++) row[x] += k * inp[y + u][x + v];
                }
            for (int x = 0; x < 24; x++) a->c1[o][y][x] = logistic(row[x]);
        }
    }
    /* s1 = avgpool2(c1) */
    for (int c = 0; c < 6; c++)
        for (int y = 0; y < 12; y++)
            for (int x = 0; x < 12; x++)
                a->s1[c][y][x] = (a->c1[c][2 * y][2 * x] + a->c1[c][2 * y][2 * x + 1]
                                  + a->c1[c][2 * y + 1][2 * x] + a->c1[c][2 * y + 1][2 * x + 1])
                                 / 4.0f;
    /* c2 = logistic(conv(s1, k2) + b2), summing over all 6 input channels */
    for (int o = 0; o < 12; o++) {
        float acc[8][8];
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++) acc[y][x] = w->b2[o];
        for (int c = 0; c < 6; c++)
            for (int u = 0; u < 5; u++)
                for (int v = 0; v < 5; v++) {
                    const float k = k2[o][c][u][v];
                    for (int y = 0; y < 8; y++)
                        for (int x = 0; x < 8; x++) acc[y][x] += k * a->s1[c][y + u][x + v];
                }
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++) a->c2[o][y][x] = logistic(acc[y][x]);
    }
    /* s2 = avgpool2(c2) */
    for (int o = 0; o < 12; o++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                a->s2[(o * 4 + y) * 4 + x] =
                    (a->c2[o][2 * y][2 * x] + a->c2[o][2 * y][2 * x + 1]
                     + a->c2[o][2 * y + 1][2 * x] + a->c2[o][2 * y + 1][2 * x + 1]) / 4.0f;
    /* r = logistic(fc . s2 + b) */
    for (int j = 0; j < 10; j++) {
        float s = w->b[j];
        for (int i = 0; i < 12 * 4 * 4; i++) s += fc[j][i] * a->s2[i];
        a->r[j] = logistic(s);
    }
}

/* Adds this sample's parameter gradients into *g and returns its loss. */
static float backward(const cnnref_params *restrict w, const float *restrict target,
                      const float (*restrict inp)[28], const acts *restrict a,
                      cnnref_params *restrict g)
{
    const float (*k2)[6][5][5] = (const float (*)[6][5][5])w->k2;
    const float (*fc)[12 * 4 * 4] = (const float (*)[12 * 4 * 4])w->fc;
    float (*gk1)[5][5] = (float (*)[5][5])g->k1;
    float (*gk2)[6][5][5] = (float (*)[6][5][5])g->k2;
    float (*gfc)[12 * 4 * 4] = (float (*)[12 * 4 * 4])g->fc;

    /* loss and d_r1 = (r - target) * r * (1 - r) */
    float loss = 0.0f, d_r1[10];
    for (int j = 0; j < 10; j++) {
        const float e = a->r[j] - target[j];
        loss += e * e;
        d_r1[j] = e * a->r[j] * (1.0f - a->r[j]);
    }
    loss *= 0.5f;

    /* fully connected layer: d_fc, d_b, d_s2 */
    float d_s2[12 * 4 * 4];
    memset(d_s2, 0, sizeof d_s2);
    for (int j = 0; j < 10; j++) {
        g->b[j] += d_r1[j];
        for (int i = 0; i < 12 * 4 * 4; i++) {
            gfc[j][i] += d_r1[j] * a->s2[i];
            d_s2[i] += fc[j][i] * d_r1[j];
        }
    }

    /* d_c21 = upsample(d_s2) / 4 * c2 * (1 - c2) */
    float d_c21[12][8][8];
    for (int o = 0; o < 12; o++)
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++) {
                const float c = a->c2[o][y][x];
                d_c21[o][y][x] = d_s2[(o * 4 + y / 2) * 4 + x / 2] / 4.0f * c * (1.0f - c);
            }

    /* second convolution: d_b2, d_k2, d_s1 */
    float d_s1[6][12][12];
    memset(d_s1, 0, sizeof d_s1);
    for (int o = 0; o < 12; o++) {
        float sb = 0.0f;
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 8; x++) sb += d_c21[o][y][x];
        g->b2[o] += sb;
        for (int c = 0; c < 6; c++)
            for (int u = 0; u < 5; u++)
                for (int v = 0; v < 5; v++) {
                    const float k = k2[o][c][u][v];
                    float s = 0.0f;
                    for (int y = 0; y < 8; y++)
                        for (int x = 0; x < 8; x++) s += d_c21[o][y][x] * a->s1[c][y + u][x + v];
                    gk2[o][c][u][v] += s;
                    for (int y = 0; y < 8; y++)
                        for (int x = 0; x < 8; x++) d_s1[c][y + u][x + v] += k * d_c21[o][y][x];
                }
    }

    /* d_c11 = upsample(d_s1) / 4 * c1 * (1 - c1); first convolution: d_b1, d_k1 */
    for (int o = 0; o < 6; o++) {
        float d_c11[24][24];
        float sb = 0.0f;
        for (int y = 0; y < 24; y++)
            for (int x = 0; x < 24; x++) {
                const float c = a->c1[o][y][x];
                d_c11[y][x] = d_s1[o][y / 2][x / 2] / 4.0f * c * (1.0f - c);
                sb += d_c11[y][x];
            }
        g->b1[o] += sb;
        for (int u = 0; u < 5; u++)
            for (int v = 0; v < 5; v++) {
                float s = 0.0f;
                for (int y = 0; y < 24; y++)
                    for (int x = 0; x < 24; x++) s += d_c11[y][x] * inp[y + u][x + v];
                gk1[o][u][v] += s;
            }
    }
    return loss;
}

static int clamp_threads(int nthreads) { return nthreads < 1 ? 1 : nthreads; }

void cnnref_batch_grad(const cnnref_params *restrict w, const cnnref_inputs *restrict xs, int n,
                       int nthreads, void *restrict ws, cnnref_params *restrict grad,
                       float *restrict loss)
{
    const int T = clamp_threads(nthreads);
    thread_ws *tws = (thread_ws *)ws;

#pragma omp parallel num_threads(T)
    {
#ifdef _OPENMP
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
        const int t = 0, nt = 1;
#endif
        /* if the runtime gave fewer threads than asked, thread 0 covers the missing slices */
        for (int part = t; part < T; part += nt) {
            thread_ws *mine = &tws[part];
            memset(&mine->acc, 0, sizeof mine->acc);
            mine->loss = 0.0f;
            const int lo = (int)((long long)part * n / T), hi = (int)((long long)(part + 1) * n / T);
            for (int s = lo; s < hi; s++) {
                acts a;
                const float (*img)[28] = (const float (*)[28])xs[s].inp;
                forward(w, img, &a);
                mine->loss += backward(w, xs[s].target, img, &a, &mine->acc);
            }
        }
    }

    /* add the accumulators in thread order, then average */
    const float *acc0 = (const float *)&tws[0].acc;
    float *out = (float *)grad;
    float lsum = tws[0].loss;
    for (int i = 0; i < CNNREF_N_PARAMS; i++) out[i] = acc0[i];
    for (int t = 1; t < T; t++) {
        const float *acc = (const float *)&tws[t].acc;
        for (int i = 0; i < CNNREF_N_PARAMS; i++) out[i] += acc[i];
        lsum += tws[t].loss;
    }
    const float fn = (float)(n > 0 ? n : 1);
    for (int i = 0; i < CNNREF_N_PARAMS; i++) out[i] /= fn;
    *loss = lsum / fn;
}

void cnnref_sgd_update(cnnref_params *restrict w, const cnnref_params *restrict grad, float lr)
{
    float *p = (float *)w;
    const float *g = (const float *)grad;
    for (int i = 0; i < CNNREF_N_PARAMS; i++) p[i] -= lr * g[i];
}

void cnnref_batch_predict(const cnnref_params *restrict w, const cnnref_inputs *restrict xs,
                          int n, int nthreads, void *restrict ws, float *restrict out)
{
    (void)ws; /* activations live on each thread's stack */
    const int T = clamp_threads(nthreads);
#pragma omp parallel for num_threads(T) schedule(static)
    for (int s = 0; s < n; s++) {
        acts a;
        forward(w, (const float (*)[28])xs[s].inp, &a);
        for (int j = 0; j < 10; j++) out[s * 10 + j] = a.r[j];
    }
}

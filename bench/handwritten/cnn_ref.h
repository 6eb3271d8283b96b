/* Hand-written reference training step for the paper's MNIST CNN (benchmark baseline).
 *
 * Written once by hand, independent of the extractor, with the same calling convention and
 * buffer layout as the generated `cnn_*` API (docs/generated-api.md) so the benchmark can
 * drive both the same way. float32, no allocation: activations live in fixed-size automatic
 * arrays, per-thread gradient accumulators in a workspace owned by the caller.
 *
 *   c11 = conv(inp, k1) + b1   6x24x24      c1 = logistic(c11)   s1 = avgpool2(c1)  6x12x12
 *   c21 = conv(s1, k2) + b2    12x(1x)8x8   c2 = logistic(c21)   s2 = avgpool2(c2)  12x(1x)4x4
 *   r1  = fc . s2 + b          10           r  = logistic(r1)
 *   loss = 1/2 sum_j (r[j] - target[j])^2
 * Convolutions are valid cross-correlations with stride 1; k2 spans all 6 input channels.
 */
#ifndef CNN_REF_H
#define CNN_REF_H

#include <stddef.h>

#define CNNREF_N_PARAMS 3898
#define CNNREF_N_INPUTS 794
#define CNNREF_N_OUT 10

/* Same field order and layout as the generated cnn_inputs / cnn_params (dump context order). */
typedef struct { float target[10]; float inp[28 * 28]; } cnnref_inputs;
typedef struct {
    float k1[6 * 5 * 5];
    float b1[6];
    float k2[12 * 6 * 5 * 5];
    float b2[12];
    float fc[10 * 12 * 4 * 4];
    float b[10];
} cnnref_params;

/* Bytes of workspace needed by cnnref_batch_grad / cnnref_batch_predict for nthreads. */
size_t cnnref_workspace_size(int nthreads);

/* Mean loss over the n samples in *loss and batch-averaged gradients in *grad. Thread t of
 * nthreads owns samples [t*n/T, (t+1)*n/T) and accumulates them in order; the per-thread
 * accumulators are added in thread order, so results are reproducible for a thread count. */
void cnnref_batch_grad(const cnnref_params *restrict w, const cnnref_inputs *restrict xs, int n,
                       int nthreads, void *restrict ws, cnnref_params *restrict grad,
                       float *restrict loss);

/* w -= lr * grad */
void cnnref_sgd_update(cnnref_params *restrict w, const cnnref_params *restrict grad, float lr);

/* Forward only: writes r (10 values) of each sample to out (n x 10). */
void cnnref_batch_predict(const cnnref_params *restrict w, const cnnref_inputs *restrict xs,
                          int n, int nthreads, void *restrict ws, float *restrict out);

#endif

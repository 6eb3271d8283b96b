"""The hand-written C baseline (bench/handwritten) computes the CNN's loss and gradients.

Checked against an independent float64 NumPy implementation written here (whose own gradient
is checked by finite differences), and against PyTorch autograd when PyTorch is installed.
"""

import numpy as np
import pytest

from bench.model import (LEARNING_RATE, N_PARAMS, init_params, jittered_params, pack_inputs,
                         param_slices, synthetic, unflatten)

swv = np.lib.stride_tricks.sliding_window_view


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def pool(a):  # (..., 2h, 2w) -> (..., h, w), 2x2 mean
    return (a[..., ::2, ::2] + a[..., 1::2, ::2] + a[..., ::2, 1::2] + a[..., 1::2, 1::2]) / 4


def unpool(d):  # adjoint of pool
    return np.repeat(np.repeat(d, 2, axis=-2), 2, axis=-1) / 4


def np_loss_and_grad(w, xs):
    """Mean loss and batch-mean gradient (flat, float64), by hand-derived reverse mode."""
    p = {k: v.astype(np.float64) for k, v in unflatten(w).items()}
    k1, b1, k2, b2, b = p["k1"], p["b1"], p["k2"], p["b2"], p["b"]
    fc = p["fc"].reshape(10, 192)
    xs = xs.astype(np.float64)
    t, img = xs[:, :10], xs[:, 10:].reshape(-1, 28, 28)
    n = xs.shape[0]
    win1 = swv(img, (5, 5), axis=(1, 2))                          # n 24 24 5 5
    c1 = logistic(np.einsum("nyxuv,ouv->noyx", win1, k1) + b1[:, None, None])
    s1 = pool(c1)                                                 # n 6 12 12
    win2 = swv(s1, (5, 5), axis=(2, 3))                           # n 6 8 8 5 5
    c2 = logistic(np.einsum("ncyxuv,ocuv->noyx", win2, k2) + b2[:, None, None])
    s2 = pool(c2).reshape(n, 192)
    r = logistic(s2 @ fc.T + b)
    loss = 0.5 * ((r - t) ** 2).sum(axis=1)
    d_r1 = (r - t) * r * (1 - r) / n                              # mean over the batch
    g = {"b": d_r1.sum(0), "fc": d_r1.T @ s2}
    d_c21 = unpool((d_r1 @ fc).reshape(n, 12, 4, 4)) * c2 * (1 - c2)
    g["b2"] = d_c21.sum((0, 2, 3))
    g["k2"] = np.einsum("noyx,ncyxuv->ocuv", d_c21, win2)
    d_s1 = np.zeros_like(s1)
    for u in range(5):
        for v in range(5):
            d_s1[:, :, u:u + 8, v:v + 8] += np.einsum("noyx,oc->ncyx", d_c21, k2[:, :, u, v])
    d_c11 = unpool(d_s1) * c1 * (1 - c1)
    g["b1"] = d_c11.sum((0, 2, 3))
    g["k1"] = np.einsum("noyx,nyxuv->ouv", d_c11, win1)
    flat = np.concatenate([g[name].reshape(-1) for name in param_slices()])
    return loss.mean(), flat, r


def rel(a, b):
    return np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b)


@pytest.fixture(scope="module")
def hw():
    from bench.handwritten import HandwrittenC
    return HandwrittenC()


@pytest.fixture(scope="module")
def batch():
    return synthetic(12, seed=3)


def test_numpy_reference_matches_finite_differences(batch):
    w = jittered_params(seed=4).astype(np.float64)
    _, g, _ = np_loss_and_grad(w, batch)
    rng = np.random.default_rng(0)
    sl = param_slices()
    # a few coordinates of every parameter
    for name, s in sl.items():
        for i in rng.choice(np.arange(s.start, s.stop), size=2, replace=False):
            e = np.zeros(N_PARAMS)
            e[i] = h = 1e-5
            fd = (np_loss_and_grad(w + e, batch)[0] - np_loss_and_grad(w - e, batch)[0]) / (2 * h)
            assert fd == pytest.approx(g[i], rel=1e-5, abs=1e-10), (name, i)


@pytest.mark.parametrize("weights", ["init", "jittered"])
@pytest.mark.parametrize("threads", [1, 2])
def test_loss_and_gradient_match_numpy(hw, batch, weights, threads):
    w = init_params() if weights == "init" else jittered_params(seed=5)
    hw.set_threads(threads)
    loss, g = hw.batch_grad(w, batch)
    ref_loss, ref_g, _ = np_loss_and_grad(w, batch)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for name, s in param_slices().items():
        assert rel(g[s], ref_g[s]) < 1e-5, name


def test_odd_batch_sizes_and_more_threads_than_samples(hw):
    xs = synthetic(3, seed=7)
    w = jittered_params(seed=6)
    ref_loss, ref_g, _ = np_loss_and_grad(w, xs)
    for n_threads in (1, 2, 4):
        hw.set_threads(n_threads)
        loss, g = hw.batch_grad(w, xs)
        assert loss == pytest.approx(ref_loss, rel=1e-5)
        assert rel(g, ref_g) < 1e-5


def test_reproducible_for_a_thread_count(hw, batch):
    w = jittered_params(seed=8)
    hw.set_threads(2)
    a, b = hw.batch_grad(w, batch), hw.batch_grad(w, batch)
    assert a[0] == b[0] and np.array_equal(a[1], b[1])


def test_predict_matches_numpy_forward(hw, batch):
    w = jittered_params(seed=9)
    hw.set_threads(2)
    out = hw.predict(w, batch, 5)  # 12 images in calls of 5, 5 and 2
    _, _, r = np_loss_and_grad(w, batch)
    assert out.shape == (12, 10)
    np.testing.assert_allclose(out, r, rtol=1e-5)


def test_training_loop_is_sgd_on_batch_gradients(hw):
    xs = synthetic(30, seed=10)
    hw.set_threads(1)
    w = init_params()
    losses = hw.train(w, xs, 10, LEARNING_RATE)
    expect = init_params().astype(np.float64)
    for k in range(3):
        loss, g, _ = np_loss_and_grad(expect.astype(np.float32), xs[10 * k:10 * (k + 1)])
        assert losses[k] == pytest.approx(loss, rel=1e-5)
        expect -= LEARNING_RATE * g
    assert rel(w, expect) < 1e-6
    assert losses[2] < losses[0]


def test_mnist_style_inputs_pack_as_the_generated_struct():
    images = np.arange(2 * 784, dtype=np.float32).reshape(2, 28, 28)
    xs = pack_inputs(images, np.array([3, 0]))
    assert xs.shape == (2, 794)
    assert xs[0, 3] == 1 and xs[0, :10].sum() == 1 and xs[1, 0] == 1
    assert np.array_equal(xs[1, 10:], images[1].ravel())


@pytest.mark.torch
def test_matches_pytorch_autograd(hw, batch):
    torch = pytest.importorskip("torch")
    from runtime import torch_reference as ref
    from bench.torch_model import params_from_flat

    w = jittered_params(seed=11)
    hw.set_threads(2)
    loss, g = hw.batch_grad(w, batch)
    ps = {k: v.detach().double().requires_grad_() for k, v in params_from_flat(w).items()}
    images = torch.tensor(batch[:, 10:].reshape(-1, 28, 28), dtype=torch.float64)
    labels = torch.tensor(batch[:, :10].argmax(1))
    tl = ref.batch_loss(ps, images, labels)
    tg = torch.autograd.grad(tl, list(ps.values()))
    flat = torch.cat([x.reshape(-1) for x in tg]).numpy()
    assert loss == pytest.approx(float(tl.detach()), rel=1e-5)
    for name, s in param_slices().items():
        assert rel(g[s], flat[s]) < 1e-5, name


def test_built_like_the_generated_c(hw):
    """Same compile and link flags as the extractor, and (where the extractor links libmvec)
    the library really calls glibc's vector expf, as the generated C does."""
    import shutil
    import subprocess

    from bench.handwritten import CFLAGS, LDFLAGS
    from extract.emit.build import CFLAGS as GEN_CFLAGS
    from extract.emit.build import LDFLAGS as GEN_LDFLAGS
    assert tuple(CFLAGS[:len(GEN_CFLAGS)]) == tuple(GEN_CFLAGS)
    assert all(f in LDFLAGS for f in GEN_LDFLAGS)
    if "-lmvec" not in GEN_LDFLAGS or shutil.which("nm") is None:
        pytest.skip("no libmvec on this platform")
    syms = subprocess.run(["nm", "-D", str(hw.path)], capture_output=True, text=True).stdout
    assert "_ZGV" in syms and "expf" in syms     # a libmvec vector variant of expf

"""runtime.Model on the CNN: parameters, gradients, training, save/load.

Every test runs twice: on the generated kernels (skipped while ``extract`` cannot be imported)
and on the hand-written C double of ``test_runtime_cdouble.py``; a test that passes on the
double and fails on the generated kernels points at the generator.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import runtime
from runtime.model import Model
from test_runtime_cdouble import use_backend

PARAMS = ["k1", "b1", "k2", "b2", "fc", "b"]


@pytest.fixture(params=["generated", "double"])
def backend(request, monkeypatch):
    use_backend(request.param, monkeypatch)
    return request.param


def batch(seed, n):
    rng = np.random.default_rng(seed)
    return rng.random((n, 28, 28), dtype=np.float32), rng.integers(0, 10, n)


@pytest.fixture(scope="module")
def mnist():
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 400)
    return x, y


def test_sac_init_and_shapes(backend):
    m = runtime.load("cnn", init="sac")
    expected = {"k1": ((6, 5, 5), 25), "b1": ((6,), 6), "k2": ((12, 6, 5, 5), 150),
                "b2": ((12,), 12), "fc": ((10, 12, 1, 4, 4), 192), "b": ((10,), 10)}
    assert list(m.params) == PARAMS
    for n, (shape, denom) in expected.items():
        a = m.params[n]
        assert a.shape == shape and a.dtype == np.float32
        np.testing.assert_array_equal(a, np.float32(1 / denom))


def test_random_init_is_seeded_and_bounded(backend):
    default, zero = runtime.load("cnn").get_params(), runtime.load("cnn", init="random").get_params()
    for n in PARAMS:  # the default is random, seed 0: a layer's units differ from the start
        np.testing.assert_array_equal(default[n], zero[n])
        assert np.unique(default[n]).size == default[n].size
    a = runtime.load("cnn", init="random", seed=1).get_params()
    b = runtime.load("cnn", init="random", seed=1).get_params()
    c = runtime.load("cnn", init="random", seed=2).get_params()
    for n, fan_in in {"k1": 25, "b1": 25, "k2": 150, "b2": 150, "fc": 192, "b": 192}.items():
        np.testing.assert_array_equal(a[n], b[n])
        assert not np.array_equal(a[n], c[n])
        assert np.abs(a[n]).max() <= 1 / np.sqrt(fan_in)
        assert np.abs(a[n]).max() > 0.5 / np.sqrt(fan_in)


def test_params_are_live_views_of_the_c_buffer(backend):
    m = runtime.load("cnn", init="random")
    x, y = batch(0, 20)
    views = m.params
    before = m.get_params()
    # writing through a view changes what the kernels compute ...
    views["b"][:] = 30.0
    np.testing.assert_allclose(m.predict(x), 1.0, atol=1e-6)
    views["b"][:] = -30.0
    np.testing.assert_allclose(m.predict(x), 0.0, atol=1e-6)
    views["b"][:] = before["b"]
    # ... and training updates the very same arrays in place
    m.train(x, y, epochs=1, batch_size=10, threads=1, progress=False, eval_train=False)
    assert m.params is views
    for n in PARAMS:
        assert not np.array_equal(views[n], before[n]), n
    assert not views["k1"].flags.owndata


@pytest.mark.torch
def test_gradients_match_pytorch_f32(backend):
    pytest.importorskip("torch")
    from runtime import torch_reference as tr

    for seed in range(5):
        m = runtime.load("cnn", init="random", seed=seed)
        x, y = batch(100 + seed, 32)
        loss, grads = m.loss_and_gradients(x, y, threads=2)
        t_loss, t_grads = tr.loss_and_gradients(m.params, x, y, "f32")
        assert abs(loss - t_loss) <= 1e-5 * abs(t_loss)
        for n in PARAMS:
            err = np.abs(grads[n] - t_grads[n]).max() / np.abs(t_grads[n]).max()
            assert err <= 1e-4, (seed, n, err)


def test_gradients_leave_weights_unchanged(backend):
    m = runtime.load("cnn", init="random")
    before = m.get_params()
    g = m.gradients(*batch(1, 10))
    assert list(g) == PARAMS and all(np.abs(g[n]).max() > 0 for n in PARAMS)
    for n in PARAMS:
        np.testing.assert_array_equal(m.params[n], before[n])


def test_finite_differences_f64(backend):
    m = runtime.load("cnn", init="random", seed=4, precision="f64")
    x, y = batch(2, 6)
    _, g = m.loss_and_gradients(x, y, threads=1)
    rng = np.random.default_rng(9)
    eps = 1e-6
    for n in PARAMS:
        for flat in rng.choice(m.params[n].size, 4, replace=False):
            idx = np.unravel_index(flat, m.params[n].shape)
            w0 = m.params[n][idx]
            m.params[n][idx] = w0 + eps
            lp, _ = m.loss_and_gradients(x, y, threads=1)
            m.params[n][idx] = w0 - eps
            lm, _ = m.loss_and_gradients(x, y, threads=1)
            m.params[n][idx] = w0
            fd = (lp - lm) / (2 * eps)
            assert fd == pytest.approx(g[n][idx], rel=1e-5, abs=1e-10), (n, idx)


def test_taylor_remainder_is_second_order_f64(backend):
    m = runtime.load("cnn", init="random", seed=6, precision="f64")
    x, y = batch(3, 8)
    w = m.get_params()
    loss0, g = m.loss_and_gradients(x, y, threads=1)
    rng = np.random.default_rng(10)
    v = {n: rng.standard_normal(a.shape) * np.abs(a).max() for n, a in w.items()}
    slope = sum(float((g[n] * v[n]).sum()) for n in PARAMS)
    first, second = [], []
    for h in [2.0 ** -k for k in range(4, 10)]:
        m.set_params({n: w[n] + h * v[n] for n in PARAMS})
        loss_h, _ = m.loss_and_gradients(x, y, threads=1)
        first.append(abs(loss_h - loss0))
        second.append(abs(loss_h - loss0 - h * slope))
    # halving h halves the zeroth-order remainder but quarters the first-order one
    r1 = np.log2(np.array(first[:-1]) / first[1:])
    r2 = np.log2(np.array(second[:-1]) / second[1:])
    assert np.all(np.abs(r1 - 1) < 0.2), r1
    assert np.all(np.abs(r2 - 2) < 0.2), r2


def _train(init_seed, data, threads, epochs=2, **kw):
    m = runtime.load("cnn", init="random", seed=init_seed)
    h = m.train(*data, epochs=epochs, batch_size=50, threads=threads, progress=False, **kw)
    return m, h


def test_single_thread_training_is_bitwise_reproducible(backend, mnist):
    data = (mnist[0][:200], mnist[1][:200])
    m1, h1 = _train(0, data, threads=1)
    m2, h2 = _train(0, data, threads=1)
    for n in PARAMS:
        assert m1.params[n].tobytes() == m2.params[n].tobytes(), n
    assert h1["loss"] == h2["loss"]
    # a fixed thread count > 1 is reproducible too, and agrees with one thread to rounding
    m3, _ = _train(0, data, threads=2)
    m4, _ = _train(0, data, threads=2)
    for n in PARAMS:
        assert m3.params[n].tobytes() == m4.params[n].tobytes(), n
        np.testing.assert_allclose(m3.params[n], m1.params[n], rtol=1e-4, atol=1e-6)


def test_loss_falls(backend, mnist):
    m = runtime.load("cnn")
    x, y = mnist
    l0 = m.loss_and_gradients(x, y)[0]
    h = m.train(x, y, epochs=3, batch_size=20, lr=0.05, progress=False, test=(x[:100], y[:100]))
    assert len(h["loss"]) == 3 and h["loss"][0] < l0
    assert h["loss"][2] < h["loss"][1] < h["loss"][0]
    assert m.loss_and_gradients(x, y)[0] < 0.5 * l0
    assert all(0 <= a <= 1 for a in h["train_accuracy"] + h["test_accuracy"])
    assert all(s > 0 for s in h["images_per_s"])


@pytest.mark.torch
def test_training_matches_pytorch_sgd_f64(backend, mnist):
    pytest.importorskip("torch")
    from runtime import torch_reference as tr

    x, y = mnist[0][:150], mnist[1][:150]
    m = runtime.load("cnn", init="random", seed=8, precision="f64")
    p = m.get_params()
    h = m.train(x, y, epochs=1, batch_size=40, lr=0.5, progress=False, eval_train=False)
    p, t_loss = tr.train_epoch(p, x, y, batch_size=40, lr=0.5, precision="f64")
    assert h["loss"][0] == pytest.approx(t_loss, rel=1e-10)
    for n in PARAMS:
        np.testing.assert_allclose(m.params[n], p[n], rtol=1e-9, atol=1e-12)


@pytest.mark.torch
def test_momentum_matches_pytorch_sgd_f64(backend, mnist):
    """``train(momentum=mu)`` is ``torch.optim.SGD(lr, momentum=mu)``, its velocity kept across
    the epochs of one call."""
    torch = pytest.importorskip("torch")
    from runtime import torch_reference as tr

    x, y = mnist[0][:150], mnist[1][:150]
    m = runtime.load("cnn", seed=8, precision="f64")
    plain = runtime.load("cnn", seed=8, precision="f64")
    p = tr.to_tensors(m.get_params(), "f64", requires_grad=True)
    tx, ty = tr._batch(x, y, "f64")
    opt = torch.optim.SGD(list(p.values()), lr=0.3, momentum=0.9)
    for _ in range(2):
        for i in range(0, 150, 40):
            opt.zero_grad()
            tr.batch_loss(p, tx[i : i + 40], ty[i : i + 40]).backward()
            opt.step()
    kw = dict(epochs=2, batch_size=40, lr=0.3, progress=False, eval_train=False)
    m.train(x, y, momentum=0.9, **kw)
    plain.train(x, y, **kw)
    for n in PARAMS:
        np.testing.assert_allclose(m.params[n], p[n].detach().numpy(), rtol=1e-9, atol=1e-12)
    assert max(np.abs(m.params[n] - plain.params[n]).max() for n in PARAMS) > 1e-3
    for bad in (1.0, -0.1, float("nan"), "0.9"):
        with pytest.raises(ValueError, match="momentum must be"):
            m.train(x, y, momentum=bad, **kw)


def _same(a, b) -> bool:
    return all(a.params[n].tobytes() == b.params[n].tobytes() for n in PARAMS)


def test_momentum_resumes_exactly(backend, mnist, tmp_path):
    """The velocity of training with momentum stays with the model, as a PyTorch optimizer's
    state does: two calls of one epoch, or one epoch, save, load and one more, give the bits of
    two epochs in one call. Without it (``reset_velocity``) they do not."""
    x, y = mnist[0][:120], mnist[1][:120]
    kw = dict(batch_size=40, lr=0.2, threads=1, progress=False, eval_train=False, momentum=0.9)
    whole = runtime.load("cnn", seed=5)
    whole.train(x, y, epochs=2, **kw)
    twice = runtime.load("cnn", seed=5)
    twice.train(x, y, epochs=1, **kw)
    assert twice.velocity_momentum == 0.9 and set(twice.velocity) == set(PARAMS)
    twice.save(tmp_path / "w.npz")
    twice.train(x, y, epochs=1, **kw)
    assert _same(whole, twice)

    resumed = runtime.load("cnn", weights=tmp_path / "w.npz")
    saved = resumed.velocity
    assert resumed.velocity_momentum == 0.9
    assert any(saved[n].any() for n in PARAMS)
    resumed.train(x, y, epochs=1, **kw)
    assert _same(whole, resumed)

    fresh = runtime.load("cnn", weights=tmp_path / "w.npz")
    fresh.reset_velocity()
    assert fresh.velocity is None
    fresh.train(x, y, epochs=1, **kw)
    assert not _same(whole, fresh)

    # no velocity for an epoch-less call; plain SGD drops it, and the file is version 1 again
    none = runtime.load("cnn", seed=5)
    none.train(x, y, epochs=0, **kw)
    assert none.velocity is None
    resumed.train(x, y, epochs=1, **{**kw, "momentum": 0.0})
    assert resumed.velocity is None and resumed.velocity_momentum is None
    resumed.save(tmp_path / "plain.npz")
    with np.load(tmp_path / "plain.npz") as f:
        assert json.loads(str(f["__meta__"]))["version"] == 1
        assert not [n for n in f.files if n.startswith("velocity/")]


@pytest.mark.torch
def test_predict_and_evaluate_match_pytorch(backend, mnist):
    pytest.importorskip("torch")
    from runtime import torch_reference as tr

    x, y = mnist
    m = runtime.load("cnn", init="random", seed=3)
    m.train(x, y, epochs=1, batch_size=20, lr=2.0, progress=False, eval_train=False)
    r = m.predict(x, chunk=64)  # several chunks, the last one partial
    t = tr.predict(m.params, x, "f32")
    assert r.shape == (400, 10)
    np.testing.assert_allclose(r, t, atol=1e-5)
    assert m.evaluate(x, y) == np.mean(t.argmax(1) == y)


def test_shuffle_is_seeded(backend, mnist):
    data = (mnist[0][:100], mnist[1][:100])
    a, _ = _train(0, data, threads=1, epochs=1, shuffle=True, seed=5)
    b, _ = _train(0, data, threads=1, epochs=1, shuffle=True, seed=5)
    c, _ = _train(0, data, threads=1, epochs=1, shuffle=False)
    assert a.params["fc"].tobytes() == b.params["fc"].tobytes()
    assert a.params["fc"].tobytes() != c.params["fc"].tobytes()


def test_save_load_round_trip(backend, tmp_path, mnist):
    m = runtime.load("cnn", init="random", seed=2, precision="f64")
    m.train(mnist[0][:50], mnist[1][:50], epochs=1, batch_size=25, progress=False)
    path = tmp_path / "w.npz"
    m.save(path)
    m.params["b"][:] = 0  # overwrite: the second save must replace the file completely
    m.save(path)
    m.params["b"][:] = 7
    m.save(path)
    assert sorted(os.listdir(tmp_path)) == ["w.npz"]  # no temporary files left behind
    m2 = runtime.load("cnn", weights=path)
    assert m2.precision == "f64"
    for n in PARAMS:
        assert m2.params[n].tobytes() == m.params[n].tobytes()
    with np.load(path) as f:
        meta = json.loads(str(f["__meta__"]))
    assert meta["format"] == "proved-kernels-weights" and meta["model"] == "cnn"
    assert meta["shapes"]["fc"] == [10, 12, 1, 4, 4]
    m3 = runtime.load("cnn", weights=path, precision="f32")
    np.testing.assert_allclose(m3.params["k2"], m.params["k2"], rtol=1e-7)


def test_interrupt_keeps_completed_updates(backend, mnist):
    x, y = mnist[0][:100], mnist[1][:100]
    m = runtime.load("cnn", init="random")

    def stop(model, record):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        m.train(x, y, epochs=5, batch_size=25, threads=1, progress=False, callback=stop)
    assert m.history["epoch"] == [1]
    ref = runtime.load("cnn", init="random")
    ref.train(x, y, epochs=1, batch_size=25, threads=1, progress=False)
    for n in PARAMS:
        assert m.params[n].tobytes() == ref.params[n].tobytes()


@pytest.mark.slow
def test_held_out_accuracy_clears_a_bar(monkeypatch):
    """End to end on the generated kernels: one epoch over the 10,000 bundled training images
    (random init, batch 10, rate 1.0; PyTorch reaches about 0.8 on this run) must classify
    held-out test images far better than chance (0.1)."""
    use_backend("generated", monkeypatch)
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train")
    xt, yt = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 2000)
    m = runtime.load("cnn", init="random", seed=0)
    m.train(x, y, epochs=1, batch_size=10, lr=1.0, progress=False, eval_train=False)
    assert m.evaluate(xt, yt) > 0.6


def test_training_loop_does_not_allocate_per_batch(backend, mnist, monkeypatch):
    """Between two batches the loop may create small Python objects (views, floats) but no
    array: the peak of traced memory between consecutive kernel calls stays far below the
    size of one batch of images (20 x 784 float64 = 125 KB; a per-batch copy would show)."""
    import tracemalloc

    from runtime._kernels import Kernels

    fn = Kernels.fn
    growth = []

    def traced_fn(self, name):
        f = fn(self, name)
        if name != "batch_grad":
            return f

        def batch_grad(*args):
            _, peak = tracemalloc.get_traced_memory()
            if hasattr(traced_fn, "base"):
                growth.append(peak - traced_fn.base)
            out = f(*args)
            tracemalloc.reset_peak()
            traced_fn.base = tracemalloc.get_traced_memory()[0]
            return out

        return batch_grad

    m = runtime.load("cnn", precision="f64")
    x, y = mnist[0][:200].astype(np.float64), mnist[1][:200]
    monkeypatch.setattr(Kernels, "fn", traced_fn)
    tracemalloc.start()
    try:
        m.train(x, y, epochs=1, batch_size=20, threads=1, progress=False, eval_train=False)
    finally:
        tracemalloc.stop()
    assert len(growth) == 9
    assert max(growth) < 8_000, growth

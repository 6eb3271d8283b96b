"""A model without per-sample data (parameters and consts only: an objective a user
differentiates directly) computes its loss and gradients through the one-sample kernels."""
from __future__ import annotations

import numpy as np
import pytest

import runtime

LSE = "model lse\nparam x : 3000\nloss l = logsumexp(x)\n"
LSQ = ("model lsq\nparam w : 8\nconst a : 50x8\nconst b : 50\n"
       "r = (for i : 50 . sum j : 8 . a[i][j] * w[j]) - b\nloss l = sum i : 50 . r[i] * r[i]\n")


@pytest.mark.agda
def test_log_sum_exp_without_data_matches_numpy(tmp_path):
    path = tmp_path / "lse.model"
    path.write_text(LSE)
    m = runtime.load(str(path), precision="f64")
    x = np.random.default_rng(1).standard_normal(3000) * 5
    m.params["x"] = x
    loss, g = m.loss_and_gradients()
    want = np.log(np.exp(x - x.max()).sum()) + x.max()
    assert abs(loss - want) <= 1e-13 * abs(want)
    np.testing.assert_allclose(g["x"], np.exp(x - want), rtol=1e-12, atol=1e-300)
    assert m.gradients()["x"].tobytes() == g["x"].tobytes()
    # batch_gradients of a model without inputs: the same one-sample result, whatever n
    lb, gb = m.batch_gradients(n=7)
    assert lb == loss and gb["x"].tobytes() == g["x"].tobytes()


@pytest.mark.agda
def test_least_squares_without_data_uses_the_one_sample_kernels(tmp_path, monkeypatch):
    path = tmp_path / "lsq.model"
    path.write_text(LSQ)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((50, 8)), rng.standard_normal(50)
    m = runtime.load(str(path), precision="f64", weights={"a": a, "b": b})
    w = rng.standard_normal(8)
    m.params["w"] = w
    k = m._k
    real_fn = k.fn

    def no_batch(name):  # the lane kernels must not run for a model without data
        assert name != "batch_grad", "batch_grad called for a model without per-sample data"
        return real_fn(name)

    monkeypatch.setattr(k, "fn", no_batch)
    loss, g = m.loss_and_gradients()
    r = a @ w - b
    assert loss == pytest.approx(r @ r, rel=1e-13)
    np.testing.assert_allclose(g["w"], 2 * a.T @ r, rtol=1e-12)
    assert set(g) == {"w"}  # consts have no gradient

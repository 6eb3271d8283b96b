"""The softmax layers of the model language (docs/model-format.md §4): ``softmax_ce(z, y)`` and
``log_softmax(z)``, per row of the last dimension, mapped over the others.

Each against NumPy in float64: the generated C (``runtime.load(..., precision="f64")``, values
and batch-mean gradients) and the oracle on the dump; one-hot and probability targets, logits of
±100 (the shift by the detached maximum), a vector, a matrix and a 3-dimensional array; the
errors name the layer and the argument.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import oracle
from conftest import elaborate_text

pytestmark = pytest.mark.agda


@pytest.fixture(scope="module")
def main(agda_main):
    return agda_main


elaborate = elaborate_text


def log_softmax(z: np.ndarray) -> np.ndarray:
    """Over the last axis, stably (NumPy, independent of the dump)."""
    top = z.max(-1, keepdims=True)
    return z - (top + np.log(np.exp(z - top).sum(-1, keepdims=True)))


ROWS = """model ce
input  x : 3x5
target y : 3x5
param  w : 3x5
output z = for t : 3 . for c : 5 . w[t][c] * x[t][c]
ce = softmax_ce(z, y)
loss   l = sum t : 3 . ce[t]
"""


def _values(rng, scale=1.0, probabilities=False):
    x, w = rng.normal(size=(3, 5)), rng.normal(size=(3, 5)) * scale
    if probabilities:
        y = rng.dirichlet(np.ones(5), size=3)
    else:
        y = np.eye(5)[rng.integers(5, size=3)]
    return x, y, w


@pytest.mark.parametrize("scale, probabilities", [(1.0, False), (1.0, True), (60.0, False)],
                         ids=["one-hot", "probabilities", "logits-100"])
def test_softmax_ce_per_row_is_numpys_value_and_gradient(main, kernel_cache, scale,
                                                         probabilities):
    """``softmax_ce(z, y)`` of a 3×5 matrix: one cross-entropy per row, ``−Σ y·log_softmax(z)``
    (for a target summing to 1), its gradient ``softmax(z) − y``; the logits reach ±100 in one
    case, where an unshifted exp would overflow."""
    import runtime
    rng = np.random.default_rng(7)
    x, y, w = _values(rng, scale, probabilities)
    r = elaborate(main, ROWS)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [b["shape"] for b in d["chain"]] == [[3, 5], 3, 1]
    assert '"op": "detach"' in json.dumps(d["chain"][1])      # the shift has no gradient
    z = w * x
    if scale > 1:
        assert np.abs(z).max() > 100
    ce = -(y * log_softmax(z)).sum(-1)
    dz = np.exp(log_softmax(z)) - y
    m = runtime.load(r.stdout, weights={"w": w}, precision="f64")
    loss, g = m.loss_and_gradients(x[None], y[None])
    np.testing.assert_allclose(loss, ce.sum(), rtol=1e-13)
    np.testing.assert_allclose(g["w"], dz * x, rtol=1e-11, atol=1e-14)
    out = oracle.evaluate(d, {"x": x, "y": y, "w": w})
    np.testing.assert_allclose(out["ce"], ce, rtol=1e-13)
    np.testing.assert_allclose(out["d_w"], dz * x, rtol=1e-11, atol=1e-14)


def test_softmax_ce_of_a_vector_is_a_scalar_loss(main, kernel_cache):
    """A vector of logits is one row: ``loss l = softmax_ce(z, y)`` (the zoo's classifiers), a
    batch of samples averaged as the runtime does."""
    import runtime
    text = """model ce1
input  x : 4
target y : 10
param  w : 10x4
output z = dense(w, x)
loss   l = softmax_ce(z, y)
"""
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    rng = np.random.default_rng(3)
    w = rng.normal(size=(10, 4)) * 5
    xs, labels = rng.normal(size=(6, 4)), rng.integers(10, size=6)
    m = runtime.load(r.stdout, weights={"w": w}, precision="f64")
    loss, g = m.loss_and_gradients(xs, labels)
    ls = log_softmax(xs @ w.T)
    np.testing.assert_allclose(loss, -ls[np.arange(6), labels].mean(), rtol=1e-13)
    np.testing.assert_allclose(g["w"], (np.exp(ls) - np.eye(10)[labels]).T @ xs / 6,
                               rtol=1e-11, atol=1e-14)


LOG_SOFTMAX = """model ls
input  x : 3x5
target y : 3x5
param  w : 3x5
z = for t : 3 . for c : 5 . w[t][c] * x[t][c]
output p = log_softmax(z)
loss   l = sqerr(p, y)
"""


def test_log_softmax_per_row_is_numpys_value_and_gradient(main, kernel_cache):
    """``log_softmax(z)`` keeps ``z``'s shape, each row ``z − logsumexp(row)``; the gradient of
    ``½‖p − y‖²`` through it is ``d − softmax(z)·Σ d`` per row (``d = p − y``)."""
    import runtime
    rng = np.random.default_rng(11)
    x, y, w = rng.normal(size=(3, 5)), rng.normal(size=(3, 5)), rng.normal(size=(3, 5)) * 30
    r = elaborate(main, LOG_SOFTMAX)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    p = log_softmax(w * x)
    dp = p - y
    dz = dp - np.exp(p) * dp.sum(-1, keepdims=True)
    m = runtime.load(r.stdout, weights={"w": w}, precision="f64")
    np.testing.assert_allclose(m.predict(x[None])[0].reshape(p.shape), p, rtol=1e-13, atol=1e-13)
    loss, g = m.loss_and_gradients(x[None], y[None])
    np.testing.assert_allclose(loss, 0.5 * (dp ** 2).sum(), rtol=1e-13)
    np.testing.assert_allclose(g["w"], dz * x, rtol=1e-11, atol=1e-13)
    out = oracle.evaluate(d, {"x": x, "y": y, "w": w})
    np.testing.assert_allclose(out["d_w"], dz * x, rtol=1e-11, atol=1e-13)


def test_three_dimensions_map_over_the_outer_two(main):
    """z : 2×3×4: ``softmax_ce`` has shape 2×3, ``log_softmax`` 2×3×4, each over the last axis."""
    text = """model r3
input  x : 2x3x4
target y : 2x3x4
c = softmax_ce(x, y)
s = log_softmax(x)
loss l = (sum i : 2x3 . c[i]) + (sum i : 2x3x4 . s[i] * y[i])
"""
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [b["shape"] for b in d["chain"][:2]] == [[2, 3], [2, [3, 4]]]
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(2, 3, 4)) * 10, rng.dirichlet(np.ones(4), size=(2, 3))
    out = oracle.evaluate(d, {"x": x, "y": y})
    np.testing.assert_allclose(out["s"], log_softmax(x), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(out["c"], -(y * log_softmax(x)).sum(-1), rtol=1e-13)


@pytest.mark.parametrize("text, says", [
    ("model m\ninput z : 4\ntarget y : 3\nloss l = softmax_ce(z, y)\n",
     "4: binding l: softmax_ce: the target y has shape 3, expected 4"),
    ("model m\ninput z : 4\ntarget y : 4\nloss l = softmax_ce(z)\n",
     "4: binding l: softmax_ce: takes logits and a target of their shape: softmax_ce(z, y)"),
    ("model m\ninput z : 4\nh = log_softmax(z, z)\nloss l = sum i : 4 . h[i]\n",
     "3: binding h: log_softmax: takes one array: log_softmax(z)"),
    ("model m\ninput z : 4\nh = log_softmax(2)\nloss l = sum i : 4 . h[i]\n",
     "3: binding h: log_softmax: the logits 2 is the number 2, not an array"),
    ("model m\ninput z : 4\ntarget y : 4\nloss l = softmax_ce(z, y) * 2\n",
     None),
])
def test_errors_name_the_layer_and_argument(main, text, says):
    r = elaborate(main, text)
    if says is None:                                  # a scalar per vector: a loss as it is
        assert r.returncode == 0, r.stderr
        return
    assert r.returncode == 1 and r.stderr.strip().endswith(says), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_row_softmax_does_not_warn_but_a_sum_inside_its_exp_does():
    """The front end warns about a sum written inside a function of an array binding (its
    gradient computes the sum again); a log-sum-exp's own sum is not counted (one more exp per
    logit, as many as its value: docs/model-format.md §4), a dense layer inside the exp is."""
    import warnings
    from extract.front.frontend import InlineSumWarning, compile_model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile_model(ROWS)
        compile_model(LOG_SOFTMAX)
    inside = ("model w\ninput x : 3x5\ntarget y : 3\nparam w : 5x5\n"
              "output c = for t : 3 . log(sum j : 5 . exp(dense(w, x[t])[j]))\n"
              "loss l = sqerr(c, y)\n")
    with pytest.warns(InlineSumWarning, match="binding c computes a sum inside "):
        compile_model(inside)

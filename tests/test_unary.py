"""The elementwise functions exp, log, recip, sqrt, relu, step end to end: a model file written with
them is elaborated by ``build/agda/Main model -`` (Spec/Front), its dumped gradients (the spec's
∇ with the declared derivatives, after opt) are checked against PyTorch autograd on an
independent PyTorch version of the model (float32, including relu exactly at 0, where both
conventions say relu′(0) = step(0) = 0) and against finite differences of the dumped loss
(float64: central differences away from the kink, and at the kink the one-sided difference
from the side where relu is flat, which is what relu′(0) = 0 means), and its generated C
against the oracle. The binary max(a, b) likewise (``MAX_MODEL``): against ``torch.maximum``
away from ties, finite differences, and at a tie its own convention (all to b) against one-sided
differences. sqrt (dump version 4: ``SQRT_MODEL``) likewise, its declared derivative
recip(sqrt a + sqrt a) against ``torch.sqrt``'s autograd and finite differences. erf (dump
version 6: ``ERF_MODEL``, the exact GELU of a BERT-style MLP) against a reference written with
Python's math.erf, in value and in float64 gradients (central differences of that reference).
"""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

import oracle
from conftest import DTYPES, rel_err, run_single, spec_main
from extract.emit import build
from extract.ir.names import c_model
from extract.ir import dump
from extract.emit.sources import generate

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.agda

# the declarations of both models of this file (``values`` draws their context)
HEAD = """input  x : 8
target t : 3
param  w1 : 6x8
param  b1 : 6
param  w2 : 3x6
param  b2 : 3
z1 = dense(w1, x, b1)
"""
# softplus through exp and log (log of a positive number), relu, recip of a positive number,
# step in the forward pass (its derivative is 0: only the factor z2 is differentiated)
MODEL = "model unary\n" + HEAD + """h  = relu(z1)
e  = log(1 + exp(z1))
z2 = dense(w2, h + e, b2)
q  = recip(1 + z2 * z2)
output out = q + step(z2) * z2
loss l = sqerr(out, t)
"""


@pytest.fixture(scope="module")
def main() -> Path:
    return spec_main()


def elaborated(main: Path, text: str) -> dict:
    """The dump of a model text (``Main model -``)."""
    r = subprocess.run([str(main), "model", "-"], input=text, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def built(d: dict, precision: str):
    m = dump.parse(d)
    g = generate(m, precision)
    ffi, lib = build.build(m.name, precision, g.files, g.cdef)
    return m, g, ffi, lib


def check_c_against_oracle(d: dict, values: dict, precision: str) -> None:
    m, _, ffi, lib = built(d, precision)
    vals = {k: x.astype(DTYPES[precision]) for k, x in values.items()}
    want = oracle.evaluate(d, vals, np.float64)
    got = run_single(ffi, lib, m, vals, precision)
    for n, x in got.items():
        err = rel_err(x, want[n])
        assert err <= {"f64": 1e-12, "f32": 1e-5}[precision], (n, err)


def check_every_coordinate(d: dict, vals: dict, out: dict, loss, h: float) -> None:
    """Every coordinate of every parameter's dumped gradient against central differences."""
    for p in params(d):
        grad = out["d_" + p]
        for ix in np.ndindex(grad.shape):
            up = {k: x.copy() for k, x in vals.items()}
            down = {k: x.copy() for k, x in vals.items()}
            up[p][ix] += h
            down[p][ix] -= h
            fd = (loss(up) - loss(down)) / (2 * h)
            assert abs(fd - grad[ix]) <= 1e-7 * max(1.0, abs(grad[ix])), (p, ix, fd, grad[ix])


@pytest.fixture(scope="module")
def d(main) -> dict:
    return elaborated(main, MODEL)


def values(seed: int, kink: bool) -> dict[str, np.ndarray]:
    """Random inputs and parameters; with ``kink``, row 0 of w1 and b1[0] are 0, so z1[0] is
    exactly 0 (in any precision) and relu is evaluated at its kink."""
    rng = np.random.default_rng(seed)
    v = {"x": rng.uniform(0.1, 1, 8), "t": rng.uniform(-1, 1, 3),
         "w1": rng.uniform(-1, 1, (6, 8)), "b1": rng.uniform(-1, 1, 6),
         "w2": rng.uniform(-1, 1, (3, 6)), "b2": rng.uniform(-1, 1, 3)}
    if kink:
        v["w1"][0] = 0
        v["b1"][0] = 0
    return v


def params(d: dict) -> list[str]:
    return [c["name"] for c in d["context"] if c["role"] == "param"]


def assert_like_torch(want: dict, loss, tv: dict, names: list[str]) -> None:
    """The oracle's loss and parameter gradients (float32) are PyTorch's: the loss to 1e-5, each
    gradient to 1e-4 (relative)."""
    assert rel_err(want["l"], loss.detach().numpy()) <= 1e-5
    for p in names:
        err = rel_err(want["d_" + p], tv[p].grad.numpy())
        assert err <= 1e-4, (p, err)


def torch_model(v: dict):
    """The model in PyTorch, written from the model file (not from the dump)."""
    torch = pytest.importorskip("torch")
    z1 = v["w1"] @ v["x"] + v["b1"]
    h = torch.relu(z1)
    e = torch.log(1 + torch.exp(z1))
    z2 = v["w2"] @ (h + e) + v["b2"]
    q = torch.reciprocal(1 + z2 * z2)
    out = q + (z2 > 0).to(z2.dtype) * z2
    return z1, z2, 0.5 * ((out - v["t"]) ** 2).sum()


def test_the_dump_uses_every_function(d):
    ops = oracle.OPS.keys() & set().union(*(_ops(b["expr"]) for b in d["chain"]))
    assert {"relu", "exp", "log", "recip", "step"} <= ops
    grads = set().union(*(_ops(g["expr"]) for g in d["gradients"]))
    assert "step" in grads                   # relu′ = step
    dump.parse(d)
    oracle.check_shapes(d)


def _ops(e) -> set:
    out = set()
    if isinstance(e, dict):
        out.add(e.get("op"))
        for x in e.values():
            out |= _ops(x)
    elif isinstance(e, list):
        for x in e:
            out |= _ops(x)
    return out


@pytest.mark.torch
@pytest.mark.parametrize("kink", [False, True], ids=["smooth", "relu-at-0"])
def test_gradients_match_pytorch_autograd(d, kink):
    torch = pytest.importorskip("torch")
    vals = values(1, kink)
    want = oracle.evaluate(d, vals, np.float32)
    tv = {k: torch.tensor(x, dtype=torch.float32, requires_grad=True) for k, x in vals.items()}
    z1, z2, loss = torch_model(tv)
    loss.backward()
    assert (float(z1.detach()[0]) == 0) == kink and bool(torch.all(z2.detach() != 0))
    if kink:
        # relu′(0) matters here: the gradient reaching h[0] is not small
        assert abs(float(want["d_h"][0])) > 1e-2
    assert_like_torch(want, loss, tv, params(d))


def test_gradients_match_finite_differences_away_from_the_kink(d):
    vals = values(2, False)
    out = oracle.evaluate(d, vals)
    assert np.min(np.abs(out["z1"])) > 1e-3 and np.min(np.abs(out["z2"])) > 1e-3

    def loss(v):
        return float(oracle.evaluate(d, v, forward_only=True)["l"][0])

    h = 1e-6
    check_every_coordinate(d, vals, out, loss, h)


def test_gradient_at_the_kink_is_the_flat_side(d):
    """At z1[0] = 0 the gradient of w1[0] and b1[0] equals the backward difference: moving
    w1[0][j] (x[j] > 0) or b1[0] down keeps z1[0] <= 0, where relu is flat (relu′(0) = 0);
    the central difference would see half of relu's jump in slope."""
    vals = values(3, True)
    out = oracle.evaluate(d, vals)
    assert out["z1"][0] == 0

    def loss(v):
        return float(oracle.evaluate(d, v, forward_only=True)["l"][0])

    h = 1e-7
    base = loss(vals)
    for p, ix in [("b1", (0,))] + [("w1", (0, j)) for j in range(8)]:
        down = {k: x.copy() for k, x in vals.items()}
        down[p][ix] -= h
        bd = (base - loss(down)) / h
        g = out["d_" + p][ix]
        assert abs(bd - g) <= 1e-5 * max(1.0, abs(g)), (p, ix, bd, g)
        up = {k: x.copy() for k, x in vals.items()}
        up[p][ix] += h
        fwd = (loss(up) - base) / h          # the other side: relu's slope 1 adds d_h[0]·∂z1
        assert abs(fwd - g) > 1e-3 * abs(out["d_h"][0]), (p, ix)


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("kink", [False, True], ids=["smooth", "relu-at-0"])
def test_generated_c_matches_oracle(d, kernel_cache, precision, kink):
    check_c_against_oracle(d, values(4, kink), precision)


# ---------------------------------------------------------------------------------------------
# sqrt (dump version 4): of 1 + z² (a smooth |z|), and a softsign z / sqrt(1 + z²); its
# declared derivative is recip(sqrt a + sqrt a), 1 / (2 sqrt a)

SQRT_MODEL = "model sqrtm\n" + HEAD + """h  = sqrt(1 + z1 * z1)
z2 = dense(w2, h, b2)
output out = z2 * recip(sqrt(1 + z2 * z2))
loss l = sqerr(out, t)
"""


@pytest.fixture(scope="module")
def dsqrt(main) -> dict:
    return elaborated(main, SQRT_MODEL)


def test_sqrt_dump(dsqrt):
    assert dsqrt["version"] == 5
    assert "sqrt" in set().union(*(_ops(b["expr"]) for b in dsqrt["chain"]))
    grads = set().union(*(_ops(g["expr"]) for g in dsqrt["gradients"]))
    assert {"sqrt", "recip"} <= grads          # sqrt′ = recip(sqrt a + sqrt a)
    dump.parse(dsqrt)
    oracle.check_shapes(dsqrt)


def sqrt_torch(v: dict):
    """The model in PyTorch, written from the model file."""
    torch = pytest.importorskip("torch")
    z1 = v["w1"] @ v["x"] + v["b1"]
    z2 = v["w2"] @ torch.sqrt(1 + z1 * z1) + v["b2"]
    out = z2 * torch.reciprocal(torch.sqrt(1 + z2 * z2))
    return 0.5 * ((out - v["t"]) ** 2).sum()


@pytest.mark.torch
def test_sqrt_gradients_match_pytorch_autograd(dsqrt):
    torch = pytest.importorskip("torch")
    vals = values(5, False)
    want = oracle.evaluate(dsqrt, vals, np.float32)
    tv = {k: torch.tensor(x, dtype=torch.float32, requires_grad=True) for k, x in vals.items()}
    loss = sqrt_torch(tv)
    loss.backward()
    assert_like_torch(want, loss, tv, params(dsqrt))


def test_sqrt_gradients_match_finite_differences(dsqrt):
    vals = values(6, False)
    out = oracle.evaluate(dsqrt, vals)

    def loss(v):
        return float(oracle.evaluate(dsqrt, v, forward_only=True)["l"][0])

    check_every_coordinate(dsqrt, vals, out, loss, 1e-6)


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_sqrt_generated_c_matches_oracle(dsqrt, kernel_cache, precision):
    m, g, _, _ = built(dsqrt, precision)
    assert ("sqrtf(" if precision == "f32" else "sqrt(") in g.files[f"{c_model(m.name)}.c"]
    check_c_against_oracle(dsqrt, values(7, False), precision)


# ---------------------------------------------------------------------------------------------
# max(a, b): bin max, elementwise; its declared derivative sends the seed times st = step(a − b)
# to a and times 1 − st to b, so at a tie (st = step 0 = 0) all of it goes to b. PyTorch's
# torch.maximum splits a tie's gradient 0.5/0.5, so the comparison with PyTorch avoids ties
# and the tie is tested on its own against one-sided differences.

MAX_MODEL = """model maxm
input  x : 8
target t : 3
param  w1 : 6x8
param  b1 : 6
param  w2 : 6x8
param  b2 : 6
param  w3 : 3x6
param  b3 : 3
z1 = dense(w1, x, b1)
z2 = dense(w2, x, b2)
mx = max(z1, z2)
z3 = dense(w3, mx, b3)
output out = logistic(z3)
loss l = sqerr(out, t)
"""


@pytest.fixture(scope="module")
def dmax(main) -> dict:
    return elaborated(main, MAX_MODEL)


def max_values(seed: int, tie: bool) -> dict[str, np.ndarray]:
    """Random inputs and parameters; with ``tie``, row 0 of w2 and b2[0] equal those of w1 and
    b1, so z1[0] = z2[0] exactly (the same operations on the same numbers)."""
    rng = np.random.default_rng(seed)
    v = {"x": rng.uniform(0.1, 1, 8), "t": rng.uniform(0, 1, 3),
         "w1": rng.uniform(-1, 1, (6, 8)), "b1": rng.uniform(-1, 1, 6),
         "w2": rng.uniform(-1, 1, (6, 8)), "b2": rng.uniform(-1, 1, 6),
         "w3": rng.uniform(-1, 1, (3, 6)), "b3": rng.uniform(-1, 1, 3)}
    if tie:
        v["w2"][0] = v["w1"][0]
        v["b2"][0] = v["b1"][0]
    return v


def test_max_dump(dmax):
    assert {"fn": "max"}.items() <= next(
        e for e in _bins(dmax["chain"]) if e["fn"] == "max").items()
    grads = set().union(*(_ops(g["expr"]) for g in dmax["gradients"]))
    assert "step" in grads                   # max′ through step(a − b)
    dump.parse(dmax)
    oracle.check_shapes(dmax)


def _bins(e) -> list:
    out = []
    if isinstance(e, dict):
        if e.get("op") == "bin":
            out.append(e)
        for x in e.values():
            out += _bins(x)
    elif isinstance(e, list):
        for x in e:
            out += _bins(x)
    return out


@pytest.mark.torch
def test_max_gradients_match_pytorch_autograd(dmax):
    torch = pytest.importorskip("torch")
    vals = max_values(1, False)
    want = oracle.evaluate(dmax, vals, np.float32)
    assert np.min(np.abs(want["z1"] - want["z2"])) > 1e-2            # no tie
    tv = {k: torch.tensor(x, dtype=torch.float32, requires_grad=True) for k, x in vals.items()}
    z1 = tv["w1"] @ tv["x"] + tv["b1"]
    z2 = tv["w2"] @ tv["x"] + tv["b2"]
    out = torch.sigmoid(tv["w3"] @ torch.maximum(z1, z2) + tv["b3"])
    loss = 0.5 * ((out - tv["t"]) ** 2).sum()
    loss.backward()
    assert_like_torch(want, loss, tv, params(dmax))


def _max_loss(dmax):
    return lambda v: float(oracle.evaluate(dmax, v, forward_only=True)["l"][0])


def test_max_gradients_match_finite_differences_away_from_a_tie(dmax):
    vals = max_values(2, False)
    out = oracle.evaluate(dmax, vals)
    assert np.min(np.abs(out["z1"] - out["z2"])) > 1e-3
    loss = _max_loss(dmax)
    h = 1e-6
    check_every_coordinate(dmax, vals, out, loss, h)


def test_max_tie_sends_the_gradient_to_b(dmax):
    """At z1[0] = z2[0] the gradient goes to b = z2 only: d_b1[0] = 0 = d_w1[0], and d_b2[0],
    d_w2[0] are the whole derivative. One-sided differences from the side where z2 stays the
    larger agree: b1[0] or w1[0][j] (x[j] > 0) moved down (max is then z2, flat in them), b2[0]
    or w2[0][j] moved up (max is z2, slope 1); the other sides disagree."""
    vals = max_values(9, True)
    out = oracle.evaluate(dmax, vals)
    assert out["z1"][0] == out["z2"][0]
    assert abs(float(out["d_mx"][0])) > 1e-2          # the tie's gradient is not small
    loss = _max_loss(dmax)
    base = loss(vals)
    h = 1e-7
    for p, ix in [("b1", (0,))] + [("w1", (0, j)) for j in range(8)]:
        assert out["d_" + p][ix] == 0, (p, ix)
        down = {k: x.copy() for k, x in vals.items()}
        down[p][ix] -= h
        assert abs((base - loss(down)) / h) <= 1e-6, (p, ix)
    for p, ix in [("b2", (0,))] + [("w2", (0, j)) for j in range(8)]:
        g = out["d_" + p][ix]
        up = {k: x.copy() for k, x in vals.items()}
        up[p][ix] += h
        assert abs((loss(up) - base) / h - g) <= 1e-5 * max(1.0, abs(g)), (p, ix, g)
        down = {k: x.copy() for k, x in vals.items()}
        down[p][ix] -= h                  # z2 below z1: max follows z1, flat in b2 and w2
        assert abs((base - loss(down)) / h) <= 1e-6, (p, ix)


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("tie", [False, True], ids=["apart", "tie"])
def test_max_generated_c_matches_oracle(dmax, kernel_cache, precision, tie):
    m, g, _, _ = built(dmax, precision)
    assert "fmax_(" in g.files[f"{c_model(m.name)}.c"]
    check_c_against_oracle(dmax, max_values(4, tie), precision)


# ---------------------------------------------------------------------------------------------
# softmax cross-entropy written stably (maxall, exp, log), as models/lenet5.model wrote it: no
# overflow at logits ±100, in float32, against PyTorch's cross_entropy on the same logits.

CE_MODEL = """model ce
input  z : 10
target y : 10
param  w : 10
s  = z * w
m  = maxall(s)
se = sum j : 10 . exp(s[j] - m)
loss loss = log(se) + m - (sum j : 10 . y[j] * s[j])
"""


@pytest.fixture(scope="module")
def dce(main) -> dict:
    return elaborated(main, CE_MODEL)


@pytest.mark.torch
@pytest.mark.parametrize("logits", ["large", "ties"])
def test_cross_entropy_is_stable_at_large_logits(dce, kernel_cache, logits):
    torch = pytest.importorskip("torch")
    z = np.array([100, -100, 99, -37, 100 if logits == "ties" else 3, -100, 0, 50, -99, 88],
                 dtype=np.float32)
    y = np.zeros(10, dtype=np.float32)
    y[3] = 1                       # a class far from the largest logit: the loss is about 137
    vals = {"z": z, "y": y, "w": np.ones(10, dtype=np.float32)}
    m, _, ffi, lib = built(dce, "f32")
    got = run_single(ffi, lib, m, vals, "f32")
    w = torch.ones(10, requires_grad=True)
    loss = torch.nn.functional.cross_entropy((torch.tensor(z) * w)[None], torch.tensor([3]))
    loss.backward()
    assert np.all(np.isfinite(got["loss"])) and np.all(np.isfinite(got["d_w"]))
    assert rel_err(got["loss"], loss.detach().numpy()) <= 1e-6
    assert rel_err(got["d_w"], w.grad.numpy()) <= 1e-5


# ---------------------------------------------------------------------------------------------
# erf (dump version 6): the exact GELU x·Φ(x) = x·(1 + erf(x/√2))/2 of a BERT-style MLP, with
# 1/√2 a const (the language writes no decimals). Its declared derivative erf′ = derf
# ((2/√π) e^(−x²), a primitive of its own) against a reference written with Python's math.erf
# (no NumPy erf, no SciPy): the C's value, and its float64 gradients against central
# differences of the reference's loss.

ERF_MODEL = """model bertmlp
input  x : 8
target t : 3
param  w1 : 6x8
param  b1 : 6
param  w2 : 3x6
param  b2 : 3
const  c : 1
z1 = dense(w1, x, b1)
u  = for i : 6 . z1[i] * c
h  = z1 * (1 + erf(u)) / 2
output out = dense(w2, h, b2)
loss l = sqerr(out, t)
"""


@pytest.fixture(scope="module")
def derf_dump(main) -> dict:
    return elaborated(main, ERF_MODEL)


def erf_reference(v: dict, x: np.ndarray) -> np.ndarray:
    """The model's output, written from the model file with math.erf (float64)."""
    z1 = v["w1"] @ x + v["b1"]
    h = np.array([z * (1 + math.erf(z / math.sqrt(2))) / 2 for z in z1])
    return v["w2"] @ h + v["b2"]


def erf_weights(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {"w1": rng.normal(0, 1, (6, 8)), "b1": rng.normal(0, 0.5, 6),
            "w2": rng.normal(0, 0.5, (3, 6)), "b2": rng.normal(0, 0.1, 3),
            "c": np.array([1 / math.sqrt(2)])}


def test_erf_dump(derf_dump):
    assert derf_dump["version"] == 6
    assert "erf" in set().union(*(_ops(b["expr"]) for b in derf_dump["chain"]))
    grads = set().union(*(_ops(g["expr"]) for g in derf_dump["gradients"]))
    assert "derf" in grads and "erf" in grads    # h′ = (1 + erf u)/2 + z1 · derf(u) · c / 2
    dump.parse(derf_dump)
    oracle.check_shapes(derf_dump)


@pytest.mark.parametrize("precision, tol", [("f64", 1e-14), ("f32", 2e-6)])
def test_erf_model_computes_math_erf(derf_dump, kernel_cache, precision, tol):
    import runtime
    v = erf_weights(11)
    m = runtime.load(derf_dump, weights=v, precision=precision)
    x = np.random.default_rng(12).normal(0, 1, (7, 8))
    want = np.array([erf_reference(v, xi) for xi in x])
    got = m.predict(x.astype(m.dtype))
    assert rel_err(got, want) <= tol, rel_err(got, want)


def test_erf_gradients_match_central_differences_of_math_erf(derf_dump, kernel_cache):
    """Every coordinate of every parameter's gradient (float64 C, one sample) against central
    differences of the math.erf reference's loss ½ Σ (out − t)²."""
    import runtime
    v = erf_weights(13)
    m = runtime.load(derf_dump, weights=v, precision="f64")
    rng = np.random.default_rng(14)
    x, t = rng.normal(0, 1, (1, 8)), rng.normal(0, 1, (1, 3))
    grads = m.gradients(x, t)

    def loss(w):
        return 0.5 * float(np.sum((erf_reference(w, x[0]) - t[0]) ** 2))

    h = 1e-6
    for p in ("w1", "b1", "w2", "b2"):
        assert grads[p].shape == v[p].shape
        for ix in np.ndindex(v[p].shape):
            up = {k: a.copy() for k, a in v.items()}
            down = {k: a.copy() for k, a in v.items()}
            up[p][ix] += h
            down[p][ix] -= h
            fd = (loss(up) - loss(down)) / (2 * h)
            assert abs(fd - grads[p][ix]) <= 1e-7 * max(1.0, abs(fd)), (p, ix, fd,
                                                                       grads[p][ix])


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_erf_generated_c_matches_oracle(derf_dump, kernel_cache, precision):
    m, g, _, _ = built(derf_dump, precision)
    text = g.files[f"{c_model(m.name)}.c"]
    assert ("erff(" if precision == "f32" else "erf(") in text and "derf(" in text
    vals = {**values(15, False), "c": np.array([1 / math.sqrt(2)])}
    check_c_against_oracle(derf_dump, vals, precision)

"""The elementwise functions exp, log, recip, relu, step end to end: a model file written with
them is elaborated by ``build/agda/Main model -`` (Spec/Front), its dumped gradients (the spec's
∇ with the declared derivatives, after opt) are checked against PyTorch autograd on an
independent PyTorch version of the model (float32, including relu exactly at 0, where both
conventions say relu′(0) = step(0) = 0) and against finite differences of the dumped loss
(float64: central differences away from the kink, and at the kink the one-sided difference
from the side where relu is flat, which is what relu′(0) = 0 means), and its generated C
against the oracle.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import oracle
from conftest import DTYPES, rel_err, run_single, spec_main
from extract import build, dump
from extract.sources import generate

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.agda

# softplus through exp and log (log of a positive number), relu, recip of a positive number,
# step in the forward pass (its derivative is 0: only the factor z2 is differentiated)
MODEL = """model unary
input  x : 8
target t : 3
param  w1 : 6x8
param  b1 : 6
param  w2 : 3x6
param  b2 : 3
z1 = dense(w1, x, b1)
h  = relu(z1)
e  = log(1 + exp(z1))
z2 = dense(w2, h + e, b2)
q  = recip(1 + z2 * z2)
output out = q + step(z2) * z2
loss l = sqerr(out, t)
"""


@pytest.fixture(scope="module")
def main() -> Path:
    return spec_main()


@pytest.fixture(scope="module")
def d(main) -> dict:
    r = subprocess.run([str(main), "model", "-"], input=MODEL, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


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
    assert rel_err(want["l"], loss.detach().numpy()) <= 1e-5
    for p in params(d):
        err = rel_err(want["d_" + p], tv[p].grad.numpy())
        assert err <= 1e-4, (p, err)


def test_gradients_match_finite_differences_away_from_the_kink(d):
    vals = values(2, False)
    out = oracle.evaluate(d, vals)
    assert np.min(np.abs(out["z1"])) > 1e-3 and np.min(np.abs(out["z2"])) > 1e-3

    def loss(v):
        return float(oracle.evaluate(d, v, forward_only=True)["l"][0])

    h = 1e-6
    for p in params(d):
        grad = out["d_" + p]
        for ix in np.ndindex(grad.shape):
            up = {k: x.copy() for k, x in vals.items()}
            down = {k: x.copy() for k, x in vals.items()}
            up[p][ix] += h
            down[p][ix] -= h
            fd = (loss(up) - loss(down)) / (2 * h)
            assert abs(fd - grad[ix]) <= 1e-7 * max(1.0, abs(grad[ix])), (p, ix, fd, grad[ix])


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
    m = dump.parse(d)
    g = generate(m, precision)
    ffi, lib = build.build(m.name, precision, g.files, g.cdef)
    vals = {k: x.astype(DTYPES[precision]) for k, x in values(4, kink).items()}
    want = oracle.evaluate(d, vals, np.float64)
    got = run_single(ffi, lib, m, vals, precision)
    for n, x in got.items():
        err = rel_err(x, want[n])
        assert err <= {"f64": 1e-12, "f32": 1e-5}[precision], (n, err)

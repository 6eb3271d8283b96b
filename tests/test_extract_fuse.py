"""extract/emit/fuse.py: parameter gradients of the form ``a * b`` added into the accumulator inside
their lane kernel (with an 8 x 8 register transpose of b per strip), and every other form left
to the lane buffer. The field validation (tests/test_validate.py) checks the fused path through
M_batch_grad exactly; here: which kernels are fused, and that a fused batch gradient equals the
mean of the one-sample gradients (double), whole strips and a short last strip alike."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from extract.ir.names import c_array, user_array
from extract.emit import build
from extract.ir import dump
from extract.ir import code as c
from extract.ir.code import Affine, Buffer, For, IVar, Load, Mul, Store
from extract.emit.fuse import fusable
from extract.passes.lanes import widen_to_lanes
from extract.passes.lower import Options
from extract.emit.sources import generate

ROOT = Path(__file__).resolve().parent.parent


def _outer(n_out: int, n_in: int):
    """d_w[o][k] = d_z[o] * x[k]: the weight gradient of a dense layer, one sample."""
    o, k = IVar("o", n_out, 0), IVar("k", n_in, 1)
    st = Store("d_w", Affine.of(o).scale(n_in) + Affine.of(k), "=",
               Mul(Load("d_z", Affine.of(o)), Load("x", Affine.of(k))))
    return (For(o, (For(k, (st,)),)),)


def test_an_outer_product_is_fused_and_a_sum_is_not():
    body, lane = widen_to_lanes(_outer(4, 12), set(), 8, {"d_w", "d_z", "x"})
    form = fusable(body, lane, 8, "d_w")
    assert form is not None
    outer, k, elem, a, b = form
    assert k.name == "k" and b.array == "x" and a == Load("d_z", Affine.of(outer[0].var).scale(8)
                                                          + Affine.of(lane))
    # the same product accumulated over a reduction loop (a convolution's weight gradient)
    o, t, k = IVar("o", 4, 0), IVar("t", 3, 1), IVar("k", 5, 2)
    acc = Store("d_w", Affine.of(o).scale(5) + Affine.of(k), "+=",
                Mul(Load("d_z", Affine.of(o).scale(3) + Affine.of(t)),
                    Load("x", Affine.of(t) + Affine.of(k))))
    body, lane = widen_to_lanes((For(o, (For(t, (For(k, (acc,)),)),)),), set(), 8,
                                {"d_w", "d_z", "x"})
    assert fusable(body, lane, 8, "d_w") is None
    # a local buffer (block_accumulators' output) is not a perfect nest
    body = (Buffer("acc0", 8),) + _outer(4, 12)
    wide, lane = widen_to_lanes(body, set(), 8, {"d_w", "d_z", "x"})
    assert fusable(wide, lane, 8, "d_w") is None


def test_continuing_loops_are_merged_into_one_strip_loop():
    """d_w[o][i][j] = d_z[o] * x[i][j] with 28 x 28 inputs: one loop of 784 elements (98 whole
    strips) rather than 28 rows of 3 strips and a short one."""
    o, i, j = IVar("o", 2, 0), IVar("i", 28, 1), IVar("j", 28, 2)
    st = Store("d_w", Affine.of(o).scale(784) + Affine.of(i).scale(28) + Affine.of(j), "=",
               Mul(Load("d_z", Affine.of(o)), Load("x", Affine.of(i).scale(28) + Affine.of(j))))
    body, lane = widen_to_lanes((For(o, (For(i, (For(j, (st,)),)),)),), set(), 8,
                                {"d_w", "d_z", "x"})
    outer, k, elem, a, b = fusable(body, lane, 8, "d_w")
    assert k.extent == 784 and [f.var.name for f in outer] == ["o"]


def _zoo_dump(name: str) -> Path:
    p = ROOT / "build" / "dump" / "zoo" / f"{name}.json"
    if not p.exists():
        pytest.skip(f"no {p} (make dump)")
    return p


def test_which_zoo_gradients_are_fused():
    for name, want in (("mlp", {"d_w1", "d_b1", "d_w2", "d_b2"}),
                       ("lenet5", {"d_w3", "d_b3", "d_w4", "d_b4", "d_w5", "d_b5"})):
        src = generate(dump.load(_zoo_dump(name))).files[f"model_{name}.c"]
        for kset in ("lanes", "hlanes"):        # both widths of lane kernels
            fused = {user_array(line.split(f"{name}_backward_", 1)[1].split(f"_{kset}_acc")[0])
                     for line in src.splitlines()
                     if line.startswith("static void") and f"_{kset}_acc(" in line
                     and f"{name}_backward_{kset}_acc" not in line}
            assert fused == want, (name, kset)


@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("n", [8, 11, 21])
def test_fused_batch_gradient_is_the_mean_of_the_one_sample_gradients(kernel_cache, n, lanes):
    """MLP in double: M_batch_grad (lane groups through the fused kernels, 8 or 16 lanes, and
    half as many: 8 samples are one half-width group at 16 lanes, 11 and 21 leave a short
    group of either width) against the mean of M_backward's gradients."""
    m = dump.load(_zoo_dump("mlp"))
    ffi, lib = build.load("mlp", "f64", dump=str(_zoo_dump("mlp")), options=Options(lanes=lanes))
    rng = np.random.default_rng(n)
    w = ffi.new("model_mlp_params *")
    wv = np.frombuffer(ffi.buffer(w), np.float64)
    wv[:] = rng.uniform(-0.1, 0.1, wv.size)
    xs = ffi.new(f"model_mlp_inputs[{n}]")
    xv = np.frombuffer(ffi.buffer(xs), np.float64).reshape(n, -1)
    xv[:] = rng.uniform(0, 1, xv.shape)
    grad, loss = ffi.new("model_mlp_params *"), ffi.new("double *")
    ws = ffi.new(f"char[{lib.model_mlp_workspace_size(1)}]")
    lib.model_mlp_batch_grad(w, xs, n, 1, ws, grad, loss)
    got = np.frombuffer(ffi.buffer(grad), np.float64).copy()
    want = np.zeros_like(got)
    v, g = ffi.new("model_mlp_values *"), ffi.new("model_mlp_grads *")
    gfield = dict(ffi.typeof("model_mlp_grads").fields)
    at = 0
    for p in m.params:
        size = ffi.sizeof(gfield[c_array(m.param_gradient(p.name).name)].type) // 8
        for s in range(n):
            lib.model_mlp_forward(w, ffi.addressof(xs[s]), v)
            lib.model_mlp_backward(w, ffi.addressof(xs[s]), v, g)
            off = gfield[c_array(m.param_gradient(p.name).name)].offset // 8
            want[at:at + size] += np.frombuffer(ffi.buffer(g), np.float64)[off:off + size]
        at += size
    want /= n
    assert np.linalg.norm(got - want) <= 1e-13 * np.linalg.norm(want)
    # bitwise reproducible at one thread
    again = ffi.new("model_mlp_params *")
    lib.model_mlp_batch_grad(w, xs, n, 1, ws, again, loss)
    assert bytes(ffi.buffer(again)) == bytes(ffi.buffer(grad))

"""Winograd's rows (extract/winograd.py): its matrices compute a correlation; the CNN's two
convolutions and its input gradient take the form in the lane kernels, and only there; the batch
gradients agree with those of the direct sums. The emitted transforms over the field, and hand
edits of each: tests/test_validate.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import dumpgen
from conftest import DTYPES, array_view, rel_err
from extract import build, dump, winograd
from extract.lower import Options
from extract.sources import generate

DATA = Path(__file__).resolve().parent / "data"
SIZES = [(4, 3), (4, 4), (4, 5), (2, 3), (2, 4), (2, 5), (2, 6), (2, 7)]


@pytest.mark.parametrize("m, r", SIZES)
def test_the_matrices_compute_a_correlation(m, r):
    F = winograd.matrices(m, r)
    AT, G, BT = (np.array([[float(v) for v in row] for row in M]) for M in (F.AT, F.G, F.BT))
    assert AT.shape == (m, F.n) and G.shape == (F.n, r) and BT.shape == (F.n, F.n)
    assert all(isinstance(v, int) for row in F.BT for v in row)
    rng = np.random.default_rng(m * 10 + r)
    for _ in range(5):
        x, w = rng.standard_normal(F.n), rng.standard_normal(r)
        want = np.array([x[q:q + r] @ w for q in range(m)])
        np.testing.assert_allclose(AT @ ((G @ w) * (BT @ x)), want, rtol=1e-11, atol=1e-12)


def test_a_row_too_long_for_the_points_is_refused():
    with pytest.raises(ValueError, match=r"F\(4, 6\) needs 8 finite points"):
        winograd.matrices(4, 6)


def kernel(c: str, name: str) -> str:
    start = re.search(rf"^static void {name}\(", c, re.M)
    assert start, name
    return c[start.end():c.index("\n}\n", start.end())]


def source(options: Options = Options()) -> str:
    m = dump.load(DATA / "cnn_hand.json")
    return generate(m, "f32", options).files["cnn.c"]


def test_the_cnn_convolutions_take_the_form_in_the_lane_kernels_only():
    c = source()
    for name, x, w in [("cnn_forward_c11", "inp", "k1"), ("cnn_forward_c21", "s1", "k2"),
                       ("cnn_backward_d_s1", "d_c21", "k2")]:
        for p, vec in (("_lanes", "vreal"), ("_hlanes", "hreal")):
            body = kernel(c, name + p)
            assert f"real {w}_w[" in body and f"{vec} {w}_w[" not in body   # one for all lanes
            assert f"{vec} {x}_w[" in body
        assert "_w[" not in kernel(c, name)                 # the one-sample kernel: direct
    # the weight gradients in chunks: 5 outputs along a kernel row, the output gradient's row
    # (24 or 8 long) its taps, F(5, 4) chunk by chunk; those rows belong to one sample each
    for name, x, w, chunks in [("cnn_backward_d_k1", "inp", "d_c11", 6),
                               ("cnn_backward_d_k2", "s1", "d_c21", 2)]:
        for p, vec in (("_lanes", "vreal"), ("_hlanes", "hreal")):
            body = kernel(c, name + p)
            assert f"{vec} {w}_w[" in body and f"{vec} {x}_w[" in body
            assert f"for (int ch = 0; ch < {chunks}; ch++)" in body
        assert "_w[" not in kernel(c, name)
    assert "vreal d_c11_w[1152];" in kernel(c, "cnn_backward_d_k1_lanes")  # a whole channel
    assert "_w[" not in source(Options(winograd=False))


@pytest.mark.parametrize("width, r, want", [
    (24, 5, (4, 5)), (8, 5, (4, 5)), (24, 3, (4, 3)), (6, 7, (2, 7)),   # whole rows of taps
    (5, 24, (5, 4)), (5, 8, (5, 4)), (5, 6, (5, 3)), (24, 8, (4, 4)),   # in chunks
    (5, 5, None), (5, 10, None), (7, 24, None), (10, 2, None)])         # neither
def test_the_sizes_of_the_tiles_and_chunks(width, r, want):
    """F(m, s) chunk by chunk only where a whole row does not fit and the products are at most
    half the direct ones: 5 outputs of 10 taps would take 5 chunks of F(5, 2), 30 products
    for 50; a row of 7 outputs has no tile."""
    assert winograd.sizes(width, r) == want
    if want and want[1] < r:
        assert winograd.sizes(width, r, chunked=False) is None


def test_a_nest_whose_buffers_exceed_the_limits_stays_direct(monkeypatch):
    """Elements per sample of the input's rows and the products: c11 1,344 + 192, c21 1,152 +
    64, d_s1 2,304 + 576; with the output gradient's rows as well, d_k1 1,344 + 40 + 1,152,
    d_k2 1,152 + 240 + 128 (per output channel); of the parameter's rows: c11 240, c21 and
    d_s1 2,880."""
    monkeypatch.setattr(winograd, "LIMIT", 2000)
    c = source()
    assert "inp_w[" in kernel(c, "cnn_forward_c11_lanes")
    assert "s1_w[" in kernel(c, "cnn_forward_c21_lanes")
    assert "d_c21_w[" in kernel(c, "cnn_backward_d_k2_lanes")
    assert "_w[" not in kernel(c, "cnn_backward_d_s1_lanes")
    # d_k1 over a whole channel does not fit: the nest inside its image rows does, a row of
    # the output gradient at a time (6 chunks of 8)
    assert "vreal d_c11_w[48];" in kernel(c, "cnn_backward_d_k1_lanes")
    monkeypatch.setattr(winograd, "LIMIT", 4096)
    monkeypatch.setattr(winograd, "SHARED", 1000)
    c = source()
    assert "inp_w[" in kernel(c, "cnn_forward_c11_lanes")
    assert "_w[" not in kernel(c, "cnn_forward_c21_lanes")
    assert "_w[" not in kernel(c, "cnn_backward_d_s1_lanes")


def batch_grad(precision: str, options: Options, n: int, nthreads: int, seed: int = 3):
    d = json.loads((DATA / "cnn_hand.json").read_text())
    m = dump.parse(d)
    g = generate(m, precision, options)
    ffi, lib = build.build(m.name, precision, g.files, g.cdef)
    dtype = DTYPES[precision]
    w, xs = ffi.new("cnn_params *"), ffi.new(f"cnn_inputs[{n}]")
    rng = np.random.default_rng(seed)
    array_view(ffi, w, dtype)[:] = rng.uniform(-0.3, 0.3, array_view(ffi, w, dtype).size)
    x = array_view(ffi, xs, dtype)
    x[:] = rng.uniform(0, 1, x.size)
    ws = ffi.new("char[]", lib.cnn_workspace_size(nthreads))
    grad, loss = ffi.new("cnn_params *"), ffi.new("real *")
    array_view(ffi, grad, dtype)[:] = np.nan
    lib.cnn_batch_grad(w, xs, n, nthreads, ws, grad, loss)
    return array_view(ffi, grad, dtype).copy(), loss[0]


@pytest.mark.parametrize("precision, tol", [("f64", 1e-13), ("f32", 2e-6)])
@pytest.mark.parametrize("n, nthreads", [(16, 1), (35, 2)])
def test_batch_gradients_agree_with_the_direct_sums(precision, tol, n, nthreads):
    """35 samples over 2 threads: two full groups and a short one the threads share (its
    kernels at half the width). Every element agrees to ``tol`` of the largest gradient."""
    direct, dloss = batch_grad(precision, Options(winograd=False), n, nthreads)
    rows, rloss = batch_grad(precision, Options(), n, nthreads)
    assert np.isfinite(direct).all() and np.isfinite(rows).all()
    print(f"{precision} n={n}: relative difference {rel_err(rows, direct):.3g}")
    assert rel_err(rows, direct) <= tol
    assert abs(rloss - dloss) <= tol * abs(dloss)

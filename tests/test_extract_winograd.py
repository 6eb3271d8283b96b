"""Winograd's rows (extract/passes/winograd.py): its matrices compute a correlation; the CNN's two
convolutions, its input gradient and its weight gradients (in chunks) take the form in the lane
kernels, and only there; the batch gradients agree with those of the direct sums; hand-built
nests of each form, rewritten, give the direct sums exactly over the rationals. The emitted
transforms over the field, and hand edits of each: tests/test_validate.py."""
from __future__ import annotations

import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

import dumpgen
from conftest import DTYPES, array_view, rel_err
from extract.emit import build
from extract.ir import dump
from extract.passes import winograd
from extract.ir import code as c
from loopnest import nest
from extract.passes.lower import Options
from extract.emit.sources import generate

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
    """The body of kernel ``name``, given in the dump's names (``cnn_forward_c11_lanes``: its C
    name is ``model_cnn_forward_a3_c11_lanes``, extract/ir/names.py)."""
    name = re.sub(r"^(\w+?)_(forward|backward)_(\w+?)(_lanes|_hlanes)?$",
                  lambda m: f"{c_model(m[1])}_{m[2]}_{c_array(m[3])}{m[4] or ''}", name)
    start = re.search(rf"^static void {name}\(", c, re.M)
    assert start, name
    return c[start.end():c.index("\n}\n", start.end())]


def source(options: Options = Options()) -> str:
    m = dump.load(DATA / "cnn_hand.json")
    return generate(m, "f32", options).files["model_cnn.c"]


def test_the_cnn_convolutions_take_the_form_in_the_lane_kernels_only():
    c = source()
    for name, x, w in [("cnn_forward_c11", "inp", "k1"), ("cnn_forward_c21", "s1", "k2"),
                       ("cnn_backward_d_s1", "d_c21", "k2")]:
        for p, vec in (("_lanes", "vreal"), ("_hlanes", "hreal")):
            body = kernel(c, name + p)
            w_, x_ = c_array(w), c_array(x)
            assert f"real {w_}_w[" in body and f"{vec} {w_}_w[" not in body  # one for all lanes
            assert f"{vec} {x_}_w[" in body
        assert "_w[" not in kernel(c, name)                 # the one-sample kernel: direct
    # the weight gradients in chunks: 5 outputs along a kernel row, the output gradient's row
    # (24 or 8 long) its taps, F(5, 4) chunk by chunk; those rows belong to one sample each
    for name, x, w, chunks in [("cnn_backward_d_k1", "inp", "d_c11", 6),
                               ("cnn_backward_d_k2", "s1", "d_c21", 2)]:
        for p, vec in (("_lanes", "vreal"), ("_hlanes", "hreal")):
            body = kernel(c, name + p)
            assert f"{vec} {c_array(w)}_w[" in body and f"{vec} {c_array(x)}_w[" in body
            assert f"for (int ch = 0; ch < {chunks}; ch++)" in body
        assert "_w[" not in kernel(c, name)
    assert "vreal a5_d_c11_w[1152];" in kernel(c, "cnn_backward_d_k1_lanes")  # a whole channel
    assert "_w[" not in source(Options(winograd=False))


@pytest.mark.parametrize("width, r, want", [
    (24, 5, (4, 5)), (8, 5, (4, 5)), (24, 3, (4, 3)), (6, 7, (2, 7)),   # whole rows of taps
    (5, 24, (5, 4)), (5, 8, (5, 4)), (5, 6, (5, 3)), (24, 8, (4, 4)),   # in chunks
    (5, 3, (5, 3)), (5, 10, (5, 4)),             # a whole row, F(5, 3); a short last chunk
    (5, 5, None), (3, 26, None), (7, 24, None), (10, 2, None)])         # neither
def test_the_sizes_of_the_tiles_and_chunks(width, r, want):
    """F(4, r) or F(2, r) over a whole row first (the only sizes of the scatter form); else, in
    the gather form, F(m, s) chunk by chunk (or the whole row, s = r; the last chunk may be
    shorter) where the products are at most half the direct ones: 3 outputs of 26 taps would
    take 5 chunks of F(3, 6), 40 products for 78; a row of 7 outputs has no tile."""
    assert winograd.sizes(width, r) == want
    if want and (want[1] < r or want[0] not in (2, 4)):
        assert winograd.sizes(width, r, chunked=False) is None


def test_a_nest_whose_buffers_exceed_the_limits_stays_direct(monkeypatch):
    """Elements per sample of the input's rows and the products: c11 1,344 + 192, c21 1,152 +
    64, d_s1 2,304 + 576; with the output gradient's rows as well, d_k1 1,344 + 40 + 1,152,
    d_k2 1,152 + 240 + 128 (per output channel); of the parameter's rows: c11 240, c21 and
    d_s1 2,880."""
    monkeypatch.setattr(winograd, "LIMIT", 2000)
    c = source()
    assert "a3_inp_w[" in kernel(c, "cnn_forward_c11_lanes")
    assert "a2_s1_w[" in kernel(c, "cnn_forward_c21_lanes")
    assert "a5_d_c21_w[" in kernel(c, "cnn_backward_d_k2_lanes")
    assert "_w[" not in kernel(c, "cnn_backward_d_s1_lanes")
    # d_k1 over a whole channel does not fit: the nest inside its image rows does, a row of
    # the output gradient at a time (6 chunks of 8)
    assert "vreal a5_d_c11_w[48];" in kernel(c, "cnn_backward_d_k1_lanes")
    monkeypatch.setattr(winograd, "LIMIT", 4096)
    monkeypatch.setattr(winograd, "SHARED", 1000)
    c = source()
    assert "a3_inp_w[" in kernel(c, "cnn_forward_c11_lanes")
    assert "_w[" not in kernel(c, "cnn_forward_c21_lanes")
    assert "_w[" not in kernel(c, "cnn_backward_d_s1_lanes")


LENET5 = Path(__file__).resolve().parent.parent / "build" / "dump" / "zoo" / "lenet5.json"


def batch_grad(precision: str, options: Options, n: int, nthreads: int, seed: int = 3,
               path: Path = DATA / "cnn_hand.json"):
    m = dump.parse(json.loads(path.read_text()))
    M = c_model(m.name)
    g = generate(m, precision, options)
    ffi, lib = build.build(M, precision, g.files, g.cdef)
    dtype = DTYPES[precision]
    w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[{n}]")
    rng = np.random.default_rng(seed)
    array_view(ffi, w, dtype)[:] = rng.uniform(-0.3, 0.3, array_view(ffi, w, dtype).size)
    x = array_view(ffi, xs, dtype)
    x[:] = rng.uniform(0, 1, x.size)
    ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(nthreads))
    grad, loss = ffi.new(f"{M}_params *"), ffi.new("real *")
    array_view(ffi, grad, dtype)[:] = np.nan
    getattr(lib, f"{M}_batch_grad")(w, xs, n, nthreads, ws, grad, loss)
    return array_view(ffi, grad, dtype).copy(), loss[0]


@pytest.mark.parametrize("precision, tol", [("f64", 1e-13), ("f32", 2e-6)])
@pytest.mark.parametrize("model, n, nthreads", [("cnn", 16, 1), ("cnn", 35, 2),
                                                ("lenet5", 35, 2)])
def test_batch_gradients_agree_with_the_direct_sums(precision, tol, model, n, nthreads):
    """35 samples over 2 threads: two full groups and a short one the threads share (its
    kernels at half the width). Every element agrees to ``tol`` of the largest gradient.
    LeNet-5: its second convolution and its weight gradient (10 taps: 3 chunks of F(5, 4), the
    last of 2)."""
    path = DATA / "cnn_hand.json"
    if model == "lenet5":
        if not LENET5.exists():
            pytest.skip("no build/dump/zoo/lenet5.json (make dump)")
        path = LENET5
        assert "d_z2_w[" in generate(dump.load(LENET5), "f32").files["model_lenet5.c"]
    direct, dloss = batch_grad(precision, Options(winograd=False), n, nthreads, path=path)
    rows, rloss = batch_grad(precision, Options(), n, nthreads, path=path)
    assert np.isfinite(direct).all() and np.isfinite(rows).all()
    print(f"{model} {precision} n={n}: relative difference {rel_err(rows, direct):.3g}")
    assert rel_err(rows, direct) <= tol
    assert abs(rloss - dloss) <= tol * abs(dloss)


def exact(stmts, inputs: dict, out: str, size: int) -> list:
    """Run loop IR over the rationals: ``inputs`` name -> list of values, ``out`` starts at 0.
    A read outside an array or of an element never written raises (an unguarded window)."""
    mem = {k: dict(enumerate(v)) for k, v in inputs.items()}
    mem[out] = dict.fromkeys(range(size), Fraction(0))

    def val(e, env, loc):
        if isinstance(e, c.Lit):
            return Fraction(e.value)
        if isinstance(e, c.Load):
            return mem[e.array][e.offset.subst(env).const]
        if isinstance(e, c.Local):
            return loc[e.name]
        if isinstance(e, (c.Add, c.Mul)):
            a, b = val(e.a, env, loc), val(e.b, env, loc)
            return a + b if isinstance(e, c.Add) else a * b
        if isinstance(e, c.Neg):
            return -val(e.a, env, loc)
        if isinstance(e, c.Scale):
            return val(e.a, env, loc) / e.n
        if isinstance(e, c.Un) and e.fn == "recip":
            return 1 / val(e.a, env, loc)
        if isinstance(e, c.Select):
            return val(e.a, env, loc) if c.cond_subst(e.cond, env) is True else Fraction(0)
        raise TypeError(e)

    def run(ss, env, loc):
        for s in ss:
            if isinstance(s, c.For):
                assert not (s.lo or s.hi)
                for k in range(s.var.extent):
                    run(s.body, {**env, s.var: c.Affine.of(k)}, loc)
            elif isinstance(s, c.Buffer):
                mem[s.name] = {}
            elif isinstance(s, c.Decl):
                loc[s.name] = val(s.value, env, loc)
            elif isinstance(s, c.Store):
                i, v = s.offset.subst(env).const, val(s.value, env, loc)
                assert s.array != out or 0 <= i < size
                mem[s.array][i] = v if s.op == "=" else mem[s.array][i] + v
            else:
                raise TypeError(s)
    run(stmts, {}, {})
    return [mem[out][i] for i in range(size)]


def c_walk(stmts):
    """Every statement, loops' bodies too."""
    for s in stmts:
        yield s
        if isinstance(s, c.For):
            yield from c_walk(s.body)


_RANK = itertools.count(1)


def _v(name: str, extent: int) -> c.IVar:
    return c.IVar(name, extent, next(_RANK))


def _conv(kind: str):
    """(statements, inputs' sizes, output, its size, the taps' array, F(m, s), chunks): a nest
    of each form, written as the lowering writes it."""
    A = c.Affine.of
    if kind == "gather":        # y 8x8 = x 12x12 correlated with w 5x5 (a parameter)
        t1, t2, j1, j2 = _v("t1", 5), _v("t2", 5), _v("j1", 8), _v("j2", 8)
        st = c.Store("y", A(j1).scale(8) + A(j2), "+=",
                     c.Mul(c.Load("x", (A(t1) + A(j1)).scale(12) + A(t2) + A(j2)),
                           c.Load("w", A(t1).scale(5) + A(t2))))
        return nest([t1, t2, j1, j2], st), {"x": 144, "w": 25}, "y", 64, "w", (4, 5), 1
    if kind == "scatter":       # y 12x12 += x 8x8 spread by w 5x5 (an input gradient)
        j1, t1, j2, t2 = _v("j1", 8), _v("t1", 5), _v("j2", 8), _v("t2", 5)
        st = c.Store("y", (A(j1) + A(t1)).scale(12) + A(j2) + A(t2), "+=",
                     c.Mul(c.Load("x", A(j1).scale(8) + A(j2)),
                           c.Load("w", A(t1).scale(5) + A(t2))))
        return nest([j1, t1, j2, t2], st), {"x": 64, "w": 25}, "y", 144, "w", (4, 5), 1
    # weight gradients, the taps a sample's own array: channels u outside the nest (each
    # zeroes its outputs first), d_y u x R x R, x (R + Q - 1) square, d_w u x Q x Q; Q = 5 with
    # R = 8 (F(5, 4), 2 chunks), 24 (6), 6 (F(5, 3), 2), 10 (F(5, 4), 3, the last of 2 taps);
    # Q = 8 with R = 8: 2 tiles of F(4, 4) and 2 chunks
    Q, R, m, size = {"wgrad8": (5, 8, 5, 4), "wgrad24": (5, 24, 5, 4), "wgrad6": (5, 6, 5, 3),
                     "wgrad10": (5, 10, 5, 4), "wgrad_tiles": (8, 8, 4, 4)}[kind]
    u, i1, q1, i2, q2 = _v("u", 2), _v("i1", R), _v("q1", Q), _v("i2", R), _v("q2", Q)
    e = _v("e", Q * Q)
    X = R + Q - 1
    st = c.Store("dw", A(u).scale(Q * Q) + A(q1).scale(Q) + A(q2), "+=",
                 c.Mul(c.Load("dy", A(u).scale(R * R) + A(i1).scale(R) + A(i2)),
                       c.Load("x", (A(i1) + A(q1)).scale(X) + A(i2) + A(q2))))
    zero = c.For(e, (c.Store("dw", A(u).scale(Q * Q) + A(e), "=", c.Lit(0)),))
    body = (c.For(u, (zero, nest([i1, q1, i2, q2], st))),)
    return (body, {"dy": 2 * R * R, "x": X * X}, "dw", 2 * Q * Q, "dy",
            (m, size), -(-R // size))


@pytest.mark.parametrize("kind", ["gather", "scatter", "wgrad8", "wgrad24", "wgrad6",
                                  "wgrad10", "wgrad_tiles"])
def test_a_hand_built_nest_gives_the_direct_sums_exactly(kind):
    """Each form, rewritten, run over the rationals on random whole numbers: the same outputs
    as the direct nest, exactly, with no read outside an array; the taps' rows one buffer for
    every sample where they are a parameter (``w``), one per sample otherwise, at the top of
    the kernel or where the nest was."""
    stmts, sizes, out, size, taps, (m, s), chunks = _conv(kind)
    if not isinstance(stmts, tuple):
        stmts = (stmts,)
    new = winograd.winograd_rows(stmts, {"w"}, {"x", "w", "y", "dy", "dw"})
    assert new != stmts
    bufs = {b.name: b for b in c_walk(new) if isinstance(b, c.Buffer)}
    n = m + s - 1
    assert bufs[f"{taps}_w"].shared == (taps == "w")
    # a parameter's rows at the top, for every row; a sample's own inside the channel loop,
    # for one channel's rows (R of them)
    top = {b.name for b in new if isinstance(b, c.Buffer)}
    assert (f"{taps}_w" in top) == (taps == "w")
    rows = 5 if taps == "w" else math.isqrt(sizes["dy"] // 2)
    assert bufs[f"{taps}_w"].size == chunks * n * rows
    rng = np.random.default_rng(len(kind))
    for _ in range(3):
        inputs = {k: [Fraction(int(v)) for v in rng.integers(-9, 10, n_)]
                  for k, n_ in sizes.items()}
        want = exact(stmts, inputs, out, size)
        assert exact(new, inputs, out, size) == want
        assert any(want)

"""Indices past C's int (extract/emit/printer.py): ``ptrdiff_t`` where an index may pass
``INT_MAX``, and only there.

- Below it nothing changes: no ``ptrdiff_t`` in the C or CUDA of the hand-built dumps (and
  scripts/emitted_hashes.py gives the same hashes as before the 64-bit path existed).
- The 64-bit path computes what the int one does: with ``printer.INT_MAX`` lowered to 40, most
  offsets of the hand-built dumps and of a dense layer (whose weight gradient is fused, in
  strips of 8 elements with a short last one: ``lmin``) print in ``ptrdiff_t``; the C compiles
  warning-free under gcc and clang, its one-sample functions match the oracle, ``batch_grad``
  the mean of the samples' gradients and ``batch_predict`` their predictions; the field
  validation accepts the C and the CUDA (host emulation), and rejects a wrong edit of the new
  code (the strip bound of ``lmin`` off by one). A loop of one dimension past the limit with
  clipped bounds, and a max-reduction over more positions, are refused by name.
- At the real limit: a const of 2.4 G elements read at its last row, and an input whose lane
  buffer holds 2.15 G elements (past 2^31 − 1 at 8 lanes and at 16), index in ``ptrdiff_t``;
  a driver that maps the buffers without reserving memory (only the pages it writes and the
  kernels read are touched) gets the exact values from the one-sample and the lane kernels.
  (With int offsets, the same driver reads 2^32 elements before the const: it crashed.)
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import dumpgen
import oracle
from conftest import DTYPES, array_view, rel_err, run_single
from extract.check import validate
from extract.emit import build, printer
from extract.emit.sources import generate
from extract.ir import dump
from extract.ir.names import c_array, c_model
from extract.passes.lower import ExtractError, Options

DATA = Path(__file__).resolve().parent / "data"
LOW = 40
# the hand-built dumps with offsets past 40 in their C (the others are too small to say much)
HAND = ["cnn_hand", "const_hand", "ops_slide", "ops_block", "pad_conv", "pad_const", "maxpool",
        "unary"]
TOL = {"f64": 1e-12, "f32": 1e-5}


def hand(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def dense() -> dict:
    """z = W x + c, loss = Σ (z − t)²: W's gradient (3×45) is fused into the accumulator
    (extract/emit/fuse.py), along the 45 inputs in strips of 8 (of 4 at half the width) and a
    short last one, past the lowered INT_MAX."""
    b = dumpgen.Builder("dense_wide")
    x, t = b.input("x", 45), b.input("t", 3)
    w, c = b.param("w", [3, 45]), b.param("c", 3)
    z = b.let("z", dumpgen.imaps(3, lambda o: dumpgen.sum_(45, lambda k: w[o][k] * x[k]) + c[o]))
    r = b.let("r", z + dumpgen.minus(t))
    loss = b.let("loss", dumpgen.sum_(3, lambda j: r[j] * r[j]))
    b.seed(loss, dumpgen.one(1))
    d_loss = b.grad(loss, dumpgen.one(1))
    d_r = b.grad(r, dumpgen.imaps(3, lambda j: d_loss * (r[j] + r[j])))
    d_z = b.grad(z, d_r)
    b.grad(w, dumpgen.imap(3, lambda o: dumpgen.imaps(45, lambda k: d_z[o] * x[k])))
    b.grad(c, d_z)
    b.output("prediction", z)
    b.output("loss", loss)
    return b.build()


def cases() -> dict:
    return {**{n: hand(n) for n in HAND}, "dense_wide": dense()}


@pytest.fixture
def low(monkeypatch):
    monkeypatch.setattr(printer, "INT_MAX", LOW)


def test_no_index_is_wide_below_int_max():
    for name, d in cases().items():
        g = generate(dump.parse(d), "f32")
        for f, text in g.files.items():
            assert "ptrdiff_t" not in text, (name, f)


def _built(d: dict, precision: str):
    m = dump.parse(d)
    g = generate(m, precision)
    ffi, lib = build.build(m.name, precision, g.files, g.cdef)
    return m, g, ffi, lib


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", sorted(cases()))
def test_wide_indices_compute_what_int_ones_do(kernel_cache, low, name, precision):
    d = cases()[name]
    m, g, ffi, lib = _built(d, precision)
    c_text = g.files[f"{c_model(m.name)}.c"]
    assert "(ptrdiff_t)" in c_text      # the lane buffers at least (the CUDA: its own test)
    if name == "dense_wide":
        assert "_acc(" in c_text and "lmin(" in c_text      # the fused strips, in ptrdiff_t
    dtype, M = DTYPES[precision], c_model(m.name)
    samples = [{k: v.astype(dtype) for k, v in dumpgen.random_context_values(d, 10 + s).items()}
               for s in range(20)]
    for s in samples[1:]:
        s.update({p.name: samples[0][p.name] for p in m.stored})
    per = [oracle.evaluate(d, s, np.float64) for s in samples]
    got = run_single(ffi, lib, m, samples[0], precision)
    for k, value in got.items():
        assert rel_err(value, per[0][k]) <= TOL[precision], (k, precision)
    w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[{len(samples)}]")
    for a in m.stored:
        array_view(ffi, getattr(w, c_array(a.name)), dtype)[:] = samples[0][a.name].ravel()
    for n, s in enumerate(samples):
        for a in m.inputs:
            array_view(ffi, getattr(xs[n], c_array(a.name)), dtype)[:] = s[a.name].ravel()
    for nt in (1, 2):
        ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(nt))
        grad, loss = ffi.new(f"{M}_params *"), ffi.new("real *")
        array_view(ffi, grad, dtype)[:] = np.nan
        getattr(lib, f"{M}_batch_grad")(w, xs, len(samples), nt, ws, grad, loss)
        for p in m.params:
            want = np.mean([r[m.param_gradient(p.name).name].ravel() for r in per], axis=0)
            got = array_view(ffi, getattr(grad, c_array(p.name)), dtype)
            assert rel_err(got, want) <= 10 * TOL[precision], (p.name, nt)
    pred = m.output("prediction") or m.chain[-1].name
    width = int(np.prod(np.shape(per[0][pred])) or 1)
    out = ffi.new(f"real[{len(samples) * width}]")
    ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(2))
    getattr(lib, f"{M}_batch_predict")(w, xs, len(samples), 2, ws, out)
    got = np.frombuffer(ffi.buffer(out), dtype).reshape(len(samples), width)
    want = np.array([np.ravel(r[pred]) for r in per])
    assert rel_err(got, want) <= 10 * TOL[precision]


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang not installed")
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_wide_c_compiles_with_warnings_as_errors(tmp_path, low, compiler):
    for name, d in cases().items():
        g = generate(dump.parse(d), "f32")
        for f, text in g.files.items():
            (tmp_path / f).write_text(text)
        c = next(f for f in g.files if f.endswith(".c"))
        r = subprocess.run([compiler, "-std=c11", "-O1", "-fopenmp", "-Wall", "-Wextra",
                            "-Werror", "-c", c, "-o", "/dev/null"], cwd=tmp_path,
                           capture_output=True, text=True)
        assert r.returncode == 0, (name, r.stderr[-3000:])


def _sources(tmp: Path, d: dict) -> validate.Sources:
    g = generate(dump.parse(d), "f32")
    tmp.mkdir(parents=True, exist_ok=True)
    for f, text in g.files.items():
        (tmp / f).write_text(text)
    (tmp / f"{d['model']}.dump.json").write_text(json.dumps(d))
    (src,) = validate.find_sources(tmp)
    return src


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
@pytest.mark.parametrize("name", ["cnn_hand", "pad_conv", "maxpool", "dense_wide"])
def test_wide_indices_validate_over_the_field(tmp_path, low, name):
    d = cases()[name]
    src = _sources(tmp_path, d)
    assert "(ptrdiff_t)" in src.c.read_text() and "(ptrdiff_t)" in src.cu.read_text()
    rep = validate.validate_model(src, validate.find_dump(src, None))
    assert rep.elements > 0 and rep.files == [src.c.name, src.cu.name]


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_a_wrong_wide_strip_bound_is_rejected(tmp_path, low):
    src = _sources(tmp_path, dense())
    text = src.c.read_text()
    edited = text.replace("lmin(8, 45 - ", "lmin(7, 45 - ", 1)
    assert edited != text
    src.c.write_text(edited)
    with pytest.raises(validate.ValidationError, match="d_w"):
        validate.validate_model(src, validate.find_dump(src, None))


def test_what_the_64_bit_path_does_not_cover_is_refused(low):
    with pytest.raises(ExtractError, match="max-reduction over more than 40 positions"):
        generate(dump.parse(hand("maxall")), "f32")
    b = dumpgen.Builder("padded")           # tests/dumpgen.py's pad_conv, 50 columns wide
    x = b.param("x", [10, 50])
    k, bias = b.param("k", [3, [3, 3]]), b.param("b", 3)
    c = b.let("c", dumpgen._mconv(dumpgen.backslide(dumpgen.ix_const([3, 3], [1, 1]), x), k,
                                  bias))
    loss = b.let("loss", dumpgen.sum_(c.shape, lambda j: c[j] * c[j]))
    b.seed(loss, dumpgen.one(1))
    b.autodiff()
    with pytest.raises(ExtractError, match="a loop of 50 iterations with clipped bounds"):
        generate(dump.parse(b.build()), "f32")


# -- at the real limit ---------------------------------------------------------------------

R, X = 300_000_000, 33_554_433      # c: 2×R×4 = 2.4 G elements; x: 2×X×4 a sample


def huge() -> dict:
    """h[i] = Σ_b c[b][R − 1][i] · x[b][X − 1][i] · p[i], loss = Σ h: the last row of each
    half of a 2.4 G-element const (offsets 1.2 G and 2.4 G), and of an input of 268 M elements
    a sample (at 8 lanes, offsets 1.07 G and 2.15 G): the second half is past 2^31 − 1 only by
    b's term, ``b * 1200000000``, which an int would overflow."""
    b = dumpgen.Builder("huge")
    x, c, p = b.input("x", [2, [X, 4]]), b.const("c", [2, [R, 4]]), b.param("p", 4)

    def last(a, n, half):
        return dumpgen.sel(dumpgen.sel(a, half), dumpgen.ix_const(n, n - 1))
    h = b.let("h", dumpgen.imaps(4, lambda i: dumpgen.sum_(
        2, lambda k: last(c, R, k)[i] * last(x, X, k)[i]) * p[i]))
    loss = b.let("loss", dumpgen.sum_(4, lambda i: h[i]))
    b.seed(loss, dumpgen.one(1))
    b.autodiff()
    b.output("prediction", h)
    b.output("loss", loss)
    return b.build()


DRIVER = r"""#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "{M}.c"

/* address space only: the pages written and read are the ones touched */
static void *reserve(size_t n)
{{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {{
        perror("mmap");
        exit(77);
    }}
    return p;
}}

int main(void)
{{
    const float c[2][4] = {{{{1, 2, 3, 4}}, {{5, 6, 7, 8}}}}, p[4] = {{2, 3, 4, 5}};
    const float x[2][4] = {{{{1, -1, 2, -2}}, {{3, 1, -1, 2}}}};
    {M}_params *w = reserve(sizeof *w);
    {M}_inputs *in = reserve(sizeof *in);
    {M}_values v;
    {M}_grads g;
    for (int i = 0; i < 4; i++) {{
        w->{p}[i] = p[i];
        for (int b = 0; b < 2; b++) {{
            w->{c}[((size_t)b * {R} + {R} - 1) * 4 + i] = c[b][i];
            in->{x}[((size_t)b * {X} + {X} - 1) * 4 + i] = x[b][i];
        }}
    }}
    {M}_forward(w, in, &v);
    {M}_backward(w, in, &v, &g);
    for (int i = 0; i < 4; i++)
        printf("%g %g\n", v.{h}[i], g.{dp}[i]);
    printf("%g\n", v.{loss}[0]);
    {M}_inputs_lanes *xl = reserve(sizeof *xl);
    {M}_values_lanes *vl = reserve(sizeof *vl);
    {M}_grads_lanes *gl = reserve(sizeof *gl);
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 2; b++)
            for (int l = 0; l < {M}_LANES; l++)
                xl->{x}[(((size_t)b * {X} + {X} - 1) * 4 + i) * {M}_LANES + l] = x[b][i] * (l + 1);
    {M}_forward_lanes(w, xl, vl);
    {M}_backward_lanes(w, xl, vl, gl);
    for (int l = 0; l < {M}_LANES; l++)
        for (int i = 0; i < 4; i++)
            printf("%g %g\n", vl->{h}[i * {M}_LANES + l], gl->{dp}[i * {M}_LANES + l]);
    return 0;
}}
"""


@pytest.mark.parametrize("lanes", [8, 16])
def test_offsets_past_int_reach_the_right_elements(tmp_path, monkeypatch, lanes):
    monkeypatch.setenv(dump.ENV_MEMORY, "1T")        # 9.6 GB of const: address space only
    d = huge()
    m = dump.parse(d)
    g = generate(m, "f32", Options(lanes=lanes))
    M = c_model(m.name)
    text = g.files[f"{M}.c"]
    cx, xx = c_array("c"), c_array("x")
    assert f"{cx}[(ptrdiff_t)t1 * 1200000000 + j + 1199999996]" in text
    assert f"{xx}[t1 * 134217732 + j + 134217728]" in text      # one sample of x: an int
    assert f"vload(&{xx}[(ptrdiff_t)t1 * {X * 4 * lanes} + j * {lanes} + " \
           f"{(X - 1) * 4 * lanes}])" in text
    assert f"real {xx}[(size_t)268435464 * {M}_LANES];" in text
    assert "for (ptrdiff_t e = 0; e < 268435464; " in text   # the gather into lanes
    for f, t in g.files.items():
        (tmp_path / f).write_text(t)
    names = {k: c_array(k) for k in ("c", "p", "x", "h", "loss", "d_p")}
    (tmp_path / "driver.c").write_text(DRIVER.format(M=M, R=R, X=X, dp=names["d_p"], **{
        k: v for k, v in names.items() if k != "d_p"}))
    # -fwrapv: an int that overflows wraps (gcc -O2 may otherwise widen it in the address
    # arithmetic and hide the overflow), so an offset left in int reads the wrong element
    r = subprocess.run(["gcc", "-std=gnu11", "-O2", "-fwrapv", "-fopenmp", "-Wall", "-Wextra",
                        "-Werror", "-Wno-unused-function", "driver.c", "-o", "driver", "-lm"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run(["./driver"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    if r.returncode == 77:
        pytest.skip(f"no address space for the sparse buffers: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    rows = [[float(t) for t in line.split()] for line in r.stdout.splitlines()]
    c = np.array([[1, 2, 3, 4], [5, 6, 7, 8.]])
    x, p = np.array([[1, -1, 2, -2], [3, 1, -1, 2.]]), np.array([2, 3, 4, 5.])
    cx = (c * x).sum(axis=0)
    assert rows[:4] == [[cx[i] * p[i], cx[i]] for i in range(4)]
    assert rows[4] == [float(np.sum(cx * p))]
    assert rows[5:] == [[cx[i] * p[i] * (l + 1), cx[i] * (l + 1)]
                        for l in range(lanes) for i in range(4)]

"""The generated CUDA run on the CPU (extract/check/cuda_host.py,
extract/emit/templates/cuda_host/cuda_host.h) against the independent NumPy interpreter
(tests/oracle.py), as the C is in test_extract_numerics.py: every chain binding and gradient of
``M_cuda_forward`` / ``M_cuda_backward`` (outputs pre-filled with NaN), ``M_cuda_batch_grad``
against the mean of the per-sample gradients and ``M_cuda_batch_predict``, for the hand-built dumps
(tests/data) and the Agda dumps (build/dump, or their golden copies). The threads of each launch run
in three orders, which must give the same bits. And: the CUDA and C printers differ only by the
strings of ``printer.Language`` and the thread-index form of parallel loops."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

import dumpgen
import oracle
from conftest import DTYPES, array_view, every_dump, rel_err
from extract.check import cuda_host
from extract.ir import dump, ir
from extract.emit import printer
from extract.passes.lower import Options, lower_to_loops
from extract.emit.sources import generate

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DUMPS = every_dump()
TOL = {"f64": 1e-12, "f32": 1e-5}
def _cases():
    return sorted(DUMPS)


def _fill(ffi, cdata, arrays, values, dtype):
    for a in arrays:
        array_view(ffi, getattr(cdata, c_array(a.name)), dtype)[:] = \
            np.asarray(values[a.name]).ravel()


def _run(ffi, lib, m, w, xs, n, dtype):
    """Raw bytes of: forward/backward of sample 0, batch_grad (1 and 3 samples in flight),
    batch_predict, all outputs pre-filled with NaN."""
    M = c_model(m.name)
    v, g = ffi.new(f"{M}_values *"), ffi.new(f"{M}_grads *")
    array_view(ffi, v, dtype)[:] = np.nan
    array_view(ffi, g, dtype)[:] = np.nan
    getattr(lib, f"{M}_cuda_forward")(w, xs, v)
    getattr(lib, f"{M}_cuda_backward")(w, xs, v, g)
    out = {"v": v, "g": g}
    for nt in (1, 3):
        ws = ffi.new("char[]", getattr(lib, f"{M}_cuda_workspace_size")(nt))
        grad, loss = ffi.new(f"{M}_params *"), ffi.new("real *")
        array_view(ffi, grad, dtype)[:] = np.nan
        loss[0] = float("nan")
        getattr(lib, f"{M}_cuda_batch_grad")(w, xs, n, nt, ws, grad, loss)
        out[f"grad{nt}"], out[f"loss{nt}"] = grad, loss
    pred = m.output("prediction") or m.chain[-1].name
    size = ir.size(m.arrays[pred].shape)
    ws = ffi.new("char[]", getattr(lib, f"{M}_cuda_workspace_size")(2))
    p = ffi.new(f"real[{n * size}]")
    array_view(ffi, p, dtype)[:] = np.nan
    getattr(lib, f"{M}_cuda_batch_predict")(w, xs, n, 2, ws, p)
    out["pred"] = p
    # the updates, on a copy of w: plain, then with momentum (vel from zero, twice)
    w2, grad, vel = (ffi.new(f"{M}_params *") for _ in range(3))
    ffi.memmove(w2, w, ffi.sizeof(f"{M}_params"))
    array_view(ffi, grad, dtype)[:] = np.linspace(-1, 1, array_view(ffi, grad, dtype).size)
    getattr(lib, f"{M}_cuda_sgd_update")(w2, grad, 0.25)
    for _ in range(2):
        getattr(lib, f"{M}_cuda_sgd_momentum_update")(w2, grad, vel, 0.25, 0.5)
    out["updated"], out["vel"] = w2, vel
    return out


# the zoo's ResNet-20 in float64 (25 s of a 2-core run: its 5 samples in each of the three
# orders of threads) runs under PK_TEST_ZOO=1; in every run, in float32, and in float64 its
# layers at a quarter of the channels and of the side (7 s)
LONG = {("zoo_resnet20", "f64"): "25 s; in float32, and a small ResNet-20 in float64, it runs"}


def _gated(names):
    import os
    return [pytest.param(n, p, marks=pytest.mark.skipif(
                not os.environ.get("PK_TEST_ZOO"), reason=f"{n}, {p}: {LONG[n, p]}; "
                                                          f"PK_TEST_ZOO=1 runs it"))
            if (n, p) in LONG else (n, p) for n in names for p in ("f64", "f32")]


@pytest.mark.parametrize("name, precision", _gated(_cases()))
def test_cuda_on_the_host_matches_oracle(kernel_cache, name, precision):
    matches_oracle(json.loads(DUMPS[name].read_text()), precision)


@pytest.mark.agda
def test_cuda_on_the_host_matches_oracle_on_a_small_resnet20(kernel_cache, small_resnet20_dump):
    matches_oracle(small_resnet20_dump, "f64")


def matches_oracle(d: dict, precision: str) -> None:
    m = dump.parse(d)
    g = generate(m, precision)
    ffi, lib = cuda_host.build_host(m.name, precision, g.files, g.cdef)
    dtype, M, n = DTYPES[precision], c_model(m.name), 5
    samples = [{k: v.astype(dtype) for k, v in dumpgen.random_context_values(d, 90 + s).items()}
               for s in range(n)]
    w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[{n}]")
    _fill(ffi, w, m.stored, samples[0], dtype)
    for s in range(n):
        _fill(ffi, xs[s], m.inputs, samples[s], dtype)
        samples[s].update({p.name: samples[0][p.name] for p in m.stored})
    want = [oracle.evaluate(d, samples[s], np.float64) for s in range(n)]

    runs = []
    for order in (0, 1, 2):
        lib.pk_cuda_host_set_order(order)
        runs.append(_run(ffi, lib, m, w, xs, n, dtype))
    lib.pk_cuda_host_set_order(0)
    got = runs[0]
    for other in runs[1:]:                      # no result depends on the order of threads
        for k in got:
            assert bytes(ffi.buffer(got[k])) == bytes(ffi.buffer(other[k])), k

    # In float32, a model with kinks (relu, max, argmax) may take the other side of a kink where a value
    # sits within rounding of it, and a softmax cross-entropy (log(se) + m − Σ y·z) cancels:
    # such models are compared 100 times less tightly in f32 (exactly in f64, and over the
    # field by tests/test_validate.py).
    kinked = precision == "f32" and any(o in json.dumps(d) for o in ('"relu"', '"max"', '"argmax"'))
    tol = TOL[precision] * (100 if kinked else 1)
    for a in m.chain:
        err = rel_err(array_view(ffi, getattr(got["v"], c_array(a.name)), dtype),
                      want[0][a.name])
        assert err <= tol, f"{M}_cuda_forward: {a.name}: relative error {err:.3g}"
    for a in m.gradients:
        err = rel_err(array_view(ffi, getattr(got["g"], c_array(a.name)), dtype),
                      want[0][a.name])
        assert err <= tol, f"{M}_cuda_backward: {a.name}: relative error {err:.3g}"
    loss_name = m.output("loss")
    for nt in (1, 3):
        for p in m.params:
            gname = m.param_gradient(p.name).name
            mean = np.mean([want[s][gname].ravel() for s in range(n)], axis=0)
            err = rel_err(array_view(ffi, getattr(got[f"grad{nt}"], c_array(p.name)), dtype), mean)
            assert err <= 10 * tol, f"batch_grad, {nt} in flight: {p.name}: {err:.3g}"
        for c in m.stored:
            if c.role == "const":           # no gradient: its field of *grad is 0
                assert not array_view(ffi, getattr(got[f"grad{nt}"], c_array(c.name)), dtype).any()
        if loss_name:
            mean = np.mean([want[s][loss_name].sum() for s in range(n)])
            assert rel_err(np.array([got[f"loss{nt}"][0]]), np.array([mean])) <= 10 * tol
    pred = m.output("prediction") or m.chain[-1].name
    preds = array_view(ffi, got["pred"], dtype).reshape(n, -1)
    for s in range(n):
        assert rel_err(preds[s], want[s][pred]) <= tol, f"batch_predict: sample {s}"
    # sgd (w - 0.25 g), then momentum 0.5 twice: v = g, then 1.5 g; w - 0.25 (g + 1.5 g), on
    # the params: a const keeps its value (and its velocity 0) though g is not 0 there
    g_np = np.linspace(-1, 1, array_view(ffi, w, dtype).size)
    for c in m.stored:
        if c.role == "const":
            f = ffi.offsetof(f"{M}_params", c_array(c.name)) // np.dtype(dtype).itemsize
            g_np[f:f + ir.size(c.shape)] = 0
    np.testing.assert_allclose(array_view(ffi, got["vel"], dtype), 1.5 * g_np, rtol=1e-6)
    np.testing.assert_allclose(array_view(ffi, got["updated"], dtype),
                               array_view(ffi, w, dtype) - 0.25 * g_np * 3.5,
                               rtol=1e-5, atol=1e-6)


def test_launch_rewrite():
    cu = "k<<<dim3(blocks(n), m), BLOCK>>>(a, b);\n    f<<<1, 1>>>(x);\n"
    assert cuda_host.host_source(cu) == \
        "pk_launch(k, dim3(blocks(n), m), BLOCK)(a, b);\n    pk_launch(f, 1, 1)(x);\n"
    with pytest.raises(ValueError):
        cuda_host.host_source("k<<<1, 1>>> (x);")


def test_a_wrong_thread_map_is_caught(kernel_cache, tmp_path):
    """The emulation runs what the .cu says: a kernel whose threads stop one element short
    leaves that element NaN."""
    d = json.loads(DUMPS["ops_map"].read_text())
    m = dump.parse(d)
    g = generate(m, "f64")
    cu = g.files[f"{c_model(m.name)}.cu"]
    k = next(re.finditer(r"if \(idx >= (\d+)\)\n        return;", cu))
    bad = cu[:k.start()] + f"if (idx >= {int(k.group(1)) - 1})\n        return;" + cu[k.end():]
    ffi, lib = cuda_host.build_host(m.name, "f64", {**g.files, f"{c_model(m.name)}.cu": bad},
                                    g.cdef)
    w, x = ffi.new(f"{c_model(m.name)}_params *"), ffi.new(f"{c_model(m.name)}_inputs *")
    v = ffi.new(f"{c_model(m.name)}_values *")
    array_view(ffi, v, np.float64)[:] = np.nan
    getattr(lib, f"{c_model(m.name)}_cuda_forward")(w, x, v)
    assert np.isnan(array_view(ffi, v, np.float64)).any()


# ---------------------------------------------------------------------------------------------
# one printer

def _without_parallel_loops(c_text: str, names: set) -> list[str]:
    """C kernel body lines without the ``for`` lines of the loops ``names`` and their closing
    braces, indentation dropped."""
    lines, out, closing = c_text.splitlines(), [], set()
    for n, ln in enumerate(lines):
        m = re.match(r"(\s*)for \(int (\w+) = ", ln)
        if m and m.group(2) in names:
            indent = m.group(1)
            closing.add(next(k for k in range(n + 1, len(lines)) if lines[k] == indent + "}"))
            continue
        if n not in closing:
            out.append(ln.strip())
    return out


@pytest.mark.parametrize("name", ["ops_map", "ops_block", "ops_slide", "cnn_hand", "pad_const"])
def test_cuda_printer_differs_from_c_only_by_thread_indices(name):
    """The same loop IR printed as C and as CUDA: the same lines but for the parallel loops,
    which are ``for`` loops in C and ``const int v = idx / stride % extent;`` in CUDA."""
    if name not in DUMPS:
        pytest.skip(f"no {name}.json")
    m = dump.parse(json.loads(DUMPS[name].read_text()))
    fwd, bwd = lower_to_loops(m, Options("element", recompute_limit=2 ** 62, threads=True))
    for k in (*fwd, *bwd):
        par = {v.name for v in printer._parallel_vars(k.body, [])}
        c_lines = _without_parallel_loops(printer.statements(k.body, printer.C), par)
        cu_lines = [ln.strip() for ln in printer.statements(k.body, printer.CUDA).splitlines()]
        threads = [ln for ln in cu_lines if re.match(r"const int (\w+) = idx\b", ln)]
        assert {re.match(r"const int (\w+)", ln).group(1) for ln in threads} == par
        assert c_lines == [ln for ln in cu_lines if ln not in threads], k.array.name


def test_printer_has_no_language_test_but_the_table():
    """printer.py names the languages only in the ``Language`` table: no ``lang.name`` tests,
    no CUDA spelling outside the table."""
    src = Path(printer.__file__).read_text()
    table = re.search(r"\nC = Language\(.*?\nLANGUAGES = .*?\n", src, re.S)
    rest = src[:table.start()] + src[table.end():]
    assert "lang.name" not in rest
    for word in ("__restrict__", "__global__", "__device__", "blockIdx", "threadIdx",
                 "atomicAdd", '"cuda"'):
        assert word not in rest, word

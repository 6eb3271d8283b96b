"""argmax and detach (dump version 5) through the extractor: the generated C (one sample, the
lane kernels of the batch entry points at 1-3 threads), against tests/oracle.py and against
NumPy's max/argmax (first occurrence on ties), with ties and NaNs; the log-sum-exp's gradient
against the analytic softmax; the gradient of a max computed in linear time (its argmax once,
outside the loop over the elements). The CUDA (on the host) and the field validation of the
same dumps are in tests/test_cuda_host.py and tests/test_validate.py (every dump of
tests/data)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

import dumpgen
import oracle
from conftest import DTYPES, array_view, rel_err, run_single
from extract.ir import dump
from extract.passes.lower import Options
from extract.emit.sources import generate
from test_extract_numerics import ALLOW_RECOMPUTE, _fill, built, check_against_oracle, \
    check_batch_grad, hand

N = 20


def max_of_input() -> dict:
    """A per-sample argmax: a = z · w (z an input), m = a[argmax a], loss = m; its gradient
    sends the seed to the first maximal position of a."""
    b = dumpgen.Builder("max_in")
    z, w = b.input("z", N), b.param("w", N)
    a = b.let("a", z * w)
    m = b.let("m", dumpgen.maxall(N, lambda i: a[i]))
    b.seed(m, dumpgen.one(1))
    b.autodiff()
    b.output("prediction", m)
    b.output("loss", m)
    return b.build()


def first_max(x: np.ndarray) -> tuple[float, int]:
    """§4's argmax by NumPy: np.argmax (the first occurrence of the maximum) when there is no
    NaN; with NaNs, a NaN at position 0 stays (no comparison with it is true), others are
    skipped: the first maximum of the rest."""
    if np.isnan(x[0]):
        return x[0], 0
    k = int(np.nanargmax(x)) if np.isnan(x).any() else int(np.argmax(x))
    return x[k], k


# values with a tie for the maximum (17 and 5: the first wins), a NaN inside, a NaN first, all
# equal, the maximum last, and -inf everywhere but one
def _cases(dtype) -> dict:
    rng = np.random.default_rng(4)
    base = rng.uniform(-1, 1, N).astype(dtype)
    out = {"random": base.copy()}
    t = base.copy()
    t[[5, 17]] = 3
    out["tie"] = t
    t = base.copy()
    t[3] = np.nan
    out["nan inside"] = t
    t = base.copy()
    t[0] = np.nan
    out["nan first"] = t
    out["all equal"] = np.full(N, 0.5, dtype)
    t = base.copy()
    t[-1] = 7
    out["last"] = t
    t = np.full(N, -np.inf, dtype)
    t[11] = -1e30 if dtype == np.float64 else -3e38
    out["-inf"] = t
    return out


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_one_sample_max_follows_numpy_and_the_oracle(kernel_cache, precision):
    d = max_of_input()
    m, g, ffi, lib = built(d, precision)
    dtype = DTYPES[precision]
    for what, a in _cases(dtype).items():
        vals = {"z": a, "w": np.ones(N, dtype)}
        got = run_single(ffi, lib, m, vals, precision)
        want = oracle.evaluate(d, vals, dtype)
        top, k = first_max(a)
        np.testing.assert_array_equal(got["m"], [top], err_msg=what)
        np.testing.assert_array_equal(want["m"], [top], err_msg=what)
        one_hot = np.zeros(N, dtype)
        one_hot[k] = 1
        np.testing.assert_array_equal(got["d_a"], one_hot, err_msg=what)
        np.testing.assert_array_equal(got["d_w"], want["d_w"], err_msg=what)


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_lane_kernels_take_each_samples_own_argmax(kernel_cache, precision):
    """batch_predict over 19 samples (two groups of 8 and a short one, then a group the
    threads share: at 1 and 2 threads), each sample its own case: every prediction is its
    sample's maximum; batch_grad is the mean of the one-hot gradients."""
    d = max_of_input()
    m, g, ffi, lib = built(d, precision)
    dtype, M = DTYPES[precision], c_model(m.name)
    cases = list(_cases(dtype).values())
    n = 19
    zs = [cases[s % len(cases)] if s % 2 else np.roll(cases[s % len(cases)], s)
          for s in range(n)]
    w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[{n}]")
    array_view(ffi, w.a1_w, dtype)[:] = 1
    for s in range(n):
        array_view(ffi, xs[s].a1_z, dtype)[:] = zs[s]
    for nt in (1, 2):
        ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(nt))
        out = ffi.new("real[]", n)
        array_view(ffi, out, dtype)[:] = 12345
        getattr(lib, f"{M}_batch_predict")(w, xs, n, nt, ws, out)
        np.testing.assert_array_equal(array_view(ffi, out, dtype),
                                      [first_max(z)[0] for z in zs])
        grad, loss = ffi.new(f"{M}_params *"), ffi.new("real *")
        getattr(lib, f"{M}_batch_grad")(w, xs, n, nt, ws, grad, loss)
        want = np.zeros(N)
        for z in zs:
            want[first_max(z)[1]] += z[first_max(z)[1]] / n
        np.testing.assert_allclose(array_view(ffi, grad.a1_w, dtype), want, rtol=1e-6)


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", ["maxall", "lse_max", "lse_detach", "maxpool"])
def test_batch_grad_of_the_argmax_dumps(kernel_cache, name, precision):
    """The lane kernels against the oracle over 1-3 threads, bitwise reproducible."""
    check_batch_grad(hand(name), precision, Options(), 11)


def test_max_pooling_is_numpys(kernel_cache):
    """The 4×4 windows of a [2, 8, 8] input: the maxima and where the gradient goes (the
    window's first maximum, ties included) as NumPy's max and argmax over each window."""
    d = hand("maxpool")
    m, g, ffi, lib = built(d, "f64")
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, (2, 8, 8)).astype(np.float64)       # many ties
    got = run_single(ffi, lib, m, {"x": x}, "f64")
    windows = x.reshape(2, 2, 4, 2, 4).transpose(0, 1, 3, 2, 4).reshape(2, 2, 2, 16)
    np.testing.assert_array_equal(got["pool"], windows.max(axis=-1).ravel())
    d_x = np.zeros((2, 8, 8))
    for c in range(2):
        for p in range(2):
            for q in range(2):
                k = int(np.argmax(windows[c, p, q]))
                d_x[c, 4 * p + k // 4, 4 * q + k % 4] = 2 * windows[c, p, q, k]
    np.testing.assert_array_equal(got["d_x"], d_x.ravel())


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", ["lse_max", "lse_detach"])
def test_log_sum_exp_gradient_is_the_softmax(kernel_cache, name, precision):
    """lse = m + log Σ exp(a − m): its value is log Σ exp a and d_a the softmax of a, whether
    the max is differentiated (its part cancels) or detached (its part is 0)."""
    d = hand(name)
    m, g, ffi, lib = built(d, precision)
    dtype = DTYPES[precision]
    rng = np.random.default_rng(7)
    z, w = rng.normal(0, 3, 10).astype(dtype), rng.normal(0, 3, 10).astype(dtype)
    got = run_single(ffi, lib, m, {"z": z, "w": w}, precision)
    a = z.astype(np.float64) * w
    soft = np.exp(a - a.max()) / np.exp(a - a.max()).sum()
    tol = 1e-13 if precision == "f64" else 1e-6
    assert abs(got["lse"][0] - np.log(np.exp(a).sum())) <= tol * 10 * abs(a).max()
    np.testing.assert_allclose(got["d_a"], soft, atol=tol)
    np.testing.assert_allclose(got["d_w"], soft * z, atol=tol * 10)
    # nothing reaches a through the detached max: no argmax in its gradient
    d_a = next(x for x in d["gradients"] if x["name"] == "d_a")
    assert ("argmax" in dumpgen.ops_used(d_a)) == (name == "lse_max")


def test_lane_argmax_of_a_scalar_call(kernel_cache):
    """An argmax whose body has no vector form in float (log: a call per lane): the body
    computed in a loop over the lanes into a buffer, then one vargstep; the gradient reads the
    body at the position through an offset (a gather per lane), so its kernel runs the nest
    once per sample. batch_grad against the oracle at 1-3 threads."""
    b = dumpgen.Builder("max_log")
    z, w = b.input("z", N), b.param("w", N)
    a = b.let("a", z * w)
    m = b.let("m", dumpgen.maxall(N, lambda i: dumpgen.log(a[i] * a[i])))
    b.seed(m, dumpgen.one(1))
    b.autodiff()
    b.output("prediction", m)
    b.output("loss", m)
    d = b.build()
    c = generate(dump.parse(d), "f32", Options(lanes=8)).files["model_max_log.c"]
    fwd = _kernel(c, "model_max_log_forward_a1_m_lanes")
    assert "tmp2[0][l] = logf(" in fwd and "vargstep(top1[0], arg0, tmp2[0], a0);" in fwd, fwd
    assert "vstore(&a1_m[0], top1[0]);" in fwd
    bwd = _kernel(c, "model_max_log_backward_a3_d_w_lanes")
    assert bwd.startswith("static void model_max_log_backward_a3_d_w_lanes(") and \
        "    for (int l = 0; l < 8; l++) {\n        int arg0 = 0;" in bwd, bwd
    check_batch_grad(d, "f32", Options(), 19)


def _kernel(text: str, function: str) -> str:
    start = text.index(f"static void {function}(")
    return text[start:text.index("\n}\n", start)]


def test_the_gradient_of_a_max_computes_its_argmax_once():
    """maxall over 1000 elements: in d_x, the argmax loop runs once, before (not inside) the
    loop over the 1000 outputs: the kernel is linear, in the one-sample C and the lane
    kernels (every lane at once: one vargstep per position, the outputs masked by vwhere)."""
    m = dump.parse(hand("maxall"))
    files = generate(m, "f32").files
    c = files["model_maxall.c"]
    for fn, step in (("model_maxall_backward_a3_d_x", "if (a1 == 0 || top1 < a1_x[a1])"),
                     ("model_maxall_backward_a3_d_x_lanes",
                      "vargstep(top1[0], arg0, vsplat(a1_x[a1]), a1);")):
        body = _kernel(c, fn)
        loops = re.findall(r"^( *)for \(int (\w+) = 0; \w+ < (\d+);", body, re.M)
        argmax = [x for x in loops if x[1].startswith("a")]
        assert len(argmax) == 1 and argmax[0][0] == "    " and argmax[0][2] == "1000", loops
        j = next(x for x in loops if x[1] == "j")
        assert j[0] == "    " and body.index("for (int j") > body.index(step), body
        assert body.count(step) == 1
    assert "vwhere((j == arg0), " in _kernel(c, "model_maxall_backward_a3_d_x_lanes")


def test_detach_prints_as_its_argument():
    """detach is the identity in the code: no call, the same loads."""
    c = generate(dump.parse(hand("lse_detach")), "f64").files["model_lse_detach.c"]
    assert "detach(" not in c and "detach" in json.dumps(hand("lse_detach"))
    assert "a1_m[0] = a1_a[arg0];" in _kernel(c, "model_lse_detach_forward_a1_m")


@pytest.mark.parametrize("precision, seed", [("f64", 2), ("f64", 10), ("f64", 12), ("f32", 8),
                                             ("f64", 18), ("f32", 23)])
def test_random_dumps_with_argmax_match_oracle(kernel_cache, precision, seed):
    """Random dumps with argmax indices and detach (dumpgen.V5), true gradients (seeds 18 and
    23: lane kernels with the argmax across the lanes, vargstep and vwhere)."""
    d = dumpgen.random_dump(seed, depth=3 if precision == "f64" or seed == 23 else 2,
                            model=f"rnd{seed}", gradients="ad", fns=dumpgen.V5)
    assert "argmax" in dumpgen.ops_used(d) and d["version"] == 5
    if seed in (18, 23):
        c = generate(dump.parse(d), precision, ALLOW_RECOMPUTE).files[f"model_rnd{seed}.c"]
        assert re.search(r"^ *vargstep\(", c, re.M) and re.search(r"vwhere\(\(", c)
        check_batch_grad(d, precision, ALLOW_RECOMPUTE, 19)
    check_against_oracle(d, precision, ALLOW_RECOMPUTE)

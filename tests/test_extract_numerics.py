"""Generated C against the independent NumPy interpreter (tests/oracle.py): every chain binding
and gradient entry, outputs pre-filled with NaN so an element never written fails; the batch
entry points against per-sample results; random well-shaped dumps from tests/dumpgen.py."""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

import dumpgen
import oracle
from conftest import DTYPES, array_view, rel_err, run_single
from extract.emit import build
from extract.ir import dump, ir
from extract.passes.lower import ExtractError, Options
from extract.emit.sources import generate

DATA = Path(__file__).resolve().parent / "data"
HAND = sorted(p.stem for p in DATA.glob("*.json"))
TOL = {"f64": 1e-12, "f32": 1e-5}
ALLOW_RECOMPUTE = Options(recompute_limit=2 ** 62)


def hand(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


@lru_cache(maxsize=None)
def _built(text: str, precision: str, options: Options):
    m = dump.parse(json.loads(text))
    g = generate(m, precision, options)
    ffi, lib = build.build(m.name, precision, g.files, g.cdef)
    return m, g, ffi, lib


def built(d: dict, precision: str, options: Options = Options()):
    return _built(json.dumps(d, sort_keys=True), precision, options)


def inputs_for(d: dict, precision: str, seed: int) -> dict:
    vals = dumpgen.random_context_values(d, seed)
    return {k: v.astype(DTYPES[precision]) for k, v in vals.items()}


def check_against_oracle(d: dict, precision: str, options: Options = Options(), seed: int = 1):
    m, g, ffi, lib = built(d, precision, options)
    vals = inputs_for(d, precision, seed)
    want = oracle.evaluate(d, vals, np.float64)
    got = run_single(ffi, lib, m, vals, precision)
    assert set(got) == {a.name for a in (*m.chain, *m.gradients)}
    for name, value in got.items():
        err = rel_err(value, want[name])
        assert err <= TOL[precision], f"{m.name}.{name}: relative error {err:.3g}"


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", HAND)
def test_hand_dumps_match_oracle(kernel_cache, name, precision):
    check_against_oracle(hand(name), precision)


@pytest.mark.parametrize("seed", range(10))
def test_random_dumps_match_oracle_f64(kernel_cache, seed):
    d = dumpgen.random_dump(seed, model=f"rnd{seed}")
    check_against_oracle(d, "f64", ALLOW_RECOMPUTE)


@pytest.mark.parametrize("seed", [100, 101, 102])
def test_random_dumps_match_oracle_f32(kernel_cache, seed):
    d = dumpgen.random_dump(seed, depth=2, model=f"rnd{seed}")
    check_against_oracle(d, "f32", ALLOW_RECOMPUTE)


@pytest.mark.parametrize("precision, seed", [("f64", 300), ("f64", 301), ("f64", 302),
                                             ("f64", 303), ("f32", 304), ("f32", 305)])
def test_random_dumps_with_every_function_match_oracle(kernel_cache, precision, seed):
    """exp, log, recip, relu, step (and logistic) in random dumps, true gradients."""
    d = dumpgen.random_dump(seed, depth=3 if precision == "f64" else 2, model=f"rnd{seed}",
                            gradients="ad", fns=dumpgen.UNARY)
    check_against_oracle(d, precision, ALLOW_RECOMPUTE)


@pytest.mark.parametrize("precision, seed", [("f64", 0), ("f64", 10), ("f32", 37), ("f32", 41)])
def test_random_dumps_with_sqrt_match_oracle(kernel_cache, precision, seed):
    """sqrt (version 4) too, in the forward chain, so the gradients hold its derivative."""
    d = dumpgen.random_dump(seed, depth=3 if precision == "f64" else 2, model=f"rnd{seed}",
                            gradients="ad", fns=dumpgen.UNARY_V4)
    assert "sqrt" in dumpgen.ops_used(d["chain"])
    check_against_oracle(d, precision, ALLOW_RECOMPUTE)


@pytest.mark.parametrize("precision, seed", [("f64", 37), ("f64", 0), ("f64", 3), ("f32", 22),
                                             ("f32", 37)])
def test_random_dumps_with_erf_match_oracle(kernel_cache, precision, seed):
    """erf and derf (version 6) in the forward chain (so the gradients hold erf′ = derf and
    derf′ = −((a + a) · derf a)), against the oracle's math.erf."""
    d = dumpgen.random_dump(seed, depth=3 if precision == "f64" else 2, model=f"rnd{seed}",
                            gradients="ad", fns=dumpgen.V6)
    assert dumpgen.ops_used(d["chain"]) & {"erf", "derf"}
    check_against_oracle(d, precision, ALLOW_RECOMPUTE)


def sqrt_ieee() -> dict:
    """y = sqrt(x · w) over an input x and a parameter w, loss = Σ y, true gradients."""
    b = dumpgen.Builder("sqrt_ieee")
    x, w = b.input("x", 8), b.param("w", 8)
    y = b.let("y", dumpgen.sqrt(x * w))
    b.let("loss", dumpgen.sum_(8, lambda i: y[i]))
    b.seed("loss", dumpgen.one(1))
    b.autodiff()
    b.output("prediction", y)
    b.output("loss", "loss")
    return b.build()


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_sqrt_follows_ieee_as_the_oracle_does(kernel_cache, precision):
    """§4: sqrt is IEEE's: NaN below 0 (and at -inf), inf at inf, 0 at 0, exact at squares;
    its derivative recip(sqrt a + sqrt a) is inf at 0 (d_w = inf · x = NaN there). One sample
    (M_forward/M_backward) and the lane kernels (M_batch_predict, full groups and a short one)
    alike."""
    d = sqrt_ieee()
    assert d["version"] == 4
    m, g, ffi, lib = built(d, precision)
    dtype, M = DTYPES[precision], c_model(m.name)
    x = np.array([-2.0, -np.inf, 0.0, 0.25, 2.0, 16.0, np.inf, np.nan], dtype)
    vals = {"x": x, "w": np.ones(8, dtype)}
    want = oracle.evaluate(d, vals, dtype)
    got = run_single(ffi, lib, m, vals, precision)
    for name in ("y", "d_w"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert np.isnan(got["y"][[0, 1, 7]]).all() and got["y"][[3, 5]].tolist() == [0.5, 4.0]
    assert np.isnan(got["d_w"][2]) and got["d_w"][5] == np.float64(0.125) * 16
    n = 19
    w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[{n}]")
    _fill(ffi, w, m.params, vals, dtype)
    for s in range(n):
        _fill(ffi, xs[s], m.inputs, {"x": np.roll(x, s)}, dtype)
    ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(1))
    out = ffi.new("real[]", n * 8)
    getattr(lib, f"{M}_batch_predict")(w, xs, n, 1, ws, out)
    pred = np.frombuffer(ffi.buffer(out), dtype).reshape(n, 8)
    for s in range(n):
        np.testing.assert_array_equal(pred[s], np.roll(want["y"], s), err_msg=f"sample {s}")


@pytest.mark.parametrize("seed", [200, 201])
def test_random_deeper_dumps_both_strategies(kernel_cache, seed):
    d = dumpgen.random_dump(seed, depth=4, n_chain=3, model=f"rnd{seed}")
    for strategy in ("dest", "element"):
        check_against_oracle(d, "f64", Options(strategy, 2 ** 62))


def test_random_dumps_cover_every_op():
    ops = set()
    for seed in range(14):
        ops |= dumpgen.ops_used(dumpgen.random_dump(seed))
    for name in HAND:
        ops |= dumpgen.ops_used(hand(name))
    every = set(dump._FIELDS)
    assert every <= ops, f"not exercised: {sorted(every - ops)}"


def test_default_rule_rejects_only_with_a_reason():
    """Random dumps either extract under the default rule or fail with the rule's message."""
    seen_reject = 0
    for seed in range(14):
        d = dumpgen.random_dump(seed, model=f"rnd{seed}")
        try:
            generate(dump.parse(d), "f64")
        except ExtractError as exc:
            seen_reject += 1
            assert "would need a temporary array" in str(exc) and "binding" in str(exc)
    assert seen_reject < 14


# ---------------------------------------------------------------------------------------------
# batch entry points

def _fill(ffi, cdata, model_arrays, values, dtype):
    for a in model_arrays:
        array_view(ffi, getattr(cdata, c_array(a.name)), dtype)[:] = \
            np.asarray(values[a.name]).ravel()


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", ["cnn_hand", "ops_slide", "ops_block", "chain_hand", "pad_const",
                                  "unary", "sqrt", "pad_conv", "inline_hand", "const_hand"])
def test_batch_grad_is_mean_of_samples_and_reproducible(kernel_cache, name, precision):
    check_batch_grad(hand(name), precision, Options(), 7)


@pytest.mark.parametrize("n", [4, 37, 51])
@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("name", ["cnn_hand", "unary"])
def test_batch_grad_at_either_lane_count(kernel_cache, name, lanes, n):
    """8 and 16 lanes whatever the default (sources.default_lanes), over 1-3 threads: 4
    samples give one group at half the width, which the threads share (extract/passes/divide.py);
    37 give full groups and short ones of either width, or at 16 lanes a group the threads
    share after 2 whole groups (at 1 and 2 threads); 51, 3 whole groups at 16 lanes (6 at 8)
    and 3 samples shared, at 1 and 3 threads (1, 2 and 3)."""
    check_batch_grad(hand(name), "f32", Options(lanes=lanes), n)


@pytest.mark.parametrize("block", [8, 16])
@pytest.mark.parametrize("name", ["cnn_hand", "ops_slide", "pad_conv"])
def test_batch_grad_at_either_block_limit(kernel_cache, name, block):
    """Register blocks of one row (8 outputs) and of two or more (16), whatever the processor
    (sources.default_block), against the oracle over 1-3 threads."""
    check_batch_grad(hand(name), "f32", Options(block=block), 21)


@pytest.mark.parametrize("name", ["cnn_hand", "ops_slide", "chain_hand"])
def test_batch_grad_without_register_blocks(kernel_cache, name):
    """Every accumulation of the lane kernels as a vreal load-add-store (no blocks)."""
    check_batch_grad(hand(name), "f64", Options(blocks=False), 11)


@pytest.mark.parametrize("strategy", ["dest", "element"])
@pytest.mark.parametrize("seed", [3, 5, 30, 201])
def test_batch_grad_of_random_dumps(kernel_cache, seed, strategy):
    """The lane kernels of random dumps (blocks, guards, logistic; with the element strategy
    scalar locals become vreal buffers, seed 201 reads one inside a logistic lane loop, and
    seed 30's dest strategy blocks a sum whose loops carry bounds): 19 samples = two full
    groups of 8 and a short one, against the oracle's gradients."""
    d = dumpgen.random_dump(seed, depth=4 if seed >= 200 else 3, model=f"rnd{seed}")
    check_batch_grad(d, "f64", Options(strategy, 2 ** 62), 19)


def test_lane_kernels_give_the_same_bits_with_and_without_inlining(kernel_cache):
    """The CNN's d_c1, d_c2 and d_r computed where they are read (extract/passes/inline.py): its
    batch gradient, loss and predictions are bitwise those of the lane kernels that store them, at
    full groups, a short one and a shared one, on 1 and 2 threads."""
    d = hand("cnn_hand")
    outs = []
    for inline in (False, True):
        m, g, ffi, lib = built(d, "f32", Options(lanes=16, inline=inline))
        M, got = c_model(m.name), []
        for n, nt in ((37, 1), (37, 2), (4, 2)):
            samples = [inputs_for(d, "f32", 30 + s) for s in range(n)]
            w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[{n}]")
            _fill(ffi, w, m.params, samples[0], np.float32)
            for s in range(n):
                _fill(ffi, xs[s], m.inputs, samples[s], np.float32)
            ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(nt))
            grad, loss = ffi.new(f"{M}_params *"), ffi.new("real *")
            out = ffi.new("real[]", n * 10)
            getattr(lib, f"{M}_batch_grad")(w, xs, n, nt, ws, grad, loss)
            getattr(lib, f"{M}_batch_predict")(w, xs, n, nt, ws, out)
            got.append(bytes(ffi.buffer(grad)) + bytes(ffi.buffer(loss)) + bytes(ffi.buffer(out)))
        outs.append(got)
    assert "model_cnn_backward_a4_d_c1_lanes(" in built(d, "f32", Options(
        lanes=16, inline=False))[1].files["model_cnn.c"]
    assert "model_cnn_backward_a4_d_c1_lanes(" not in built(d, "f32", Options(
        lanes=16))[1].files["model_cnn.c"]
    assert outs[0] == outs[1]


_TEAM = r"""
import hashlib, sys
sys.path[:0] = [{tests!r}]
import numpy as np
from test_extract_numerics import _fill, built, hand, inputs_for
from extract.passes.lower import Options
from extract.ir.names import c_model
m, g, ffi, lib = built(hand("cnn_hand"), "f32", Options(lanes=16))
M = c_model(m.name)
out = []
for n, nt in ((4, 2), (37, 2), (51, 3), (37, 3)):
    w, xs = ffi.new(f"{{M}}_params *"), ffi.new(f"{{M}}_inputs[{{n}}]")
    samples = [inputs_for(hand("cnn_hand"), "f32", 10 + s) for s in range(n)]
    _fill(ffi, w, m.params, samples[0], np.float32)
    for s in range(n):
        _fill(ffi, xs[s], m.inputs, samples[s], np.float32)
    ws = ffi.new("char[]", getattr(lib, f"{{M}}_workspace_size")(nt))
    grad, loss = ffi.new(f"{{M}}_params *"), ffi.new("real *")
    getattr(lib, f"{{M}}_batch_grad")(w, xs, n, nt, ws, grad, loss)
    out.append(hashlib.sha256(bytes(ffi.buffer(grad)) + bytes(ffi.buffer(loss))).hexdigest())
print(" ".join(out))
"""


def test_batch_grad_does_not_depend_on_the_team(kernel_cache):
    """The result depends on nthreads only, not on how many threads OpenMP grants
    (OMP_THREAD_LIMIT): a group the threads share adds its sums into its own accumulator, each
    element by one thread whatever the team (batches of 4, 37 and 51 at 16 lanes share their
    last group at 2 and 3 threads)."""
    import os
    import subprocess
    import sys
    script = _TEAM.format(tests=str(Path(__file__).resolve().parent))
    hashes = []
    for limit in (None, "1", "2"):
        env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
        if limit:
            env["OMP_THREAD_LIMIT"] = limit
        res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        hashes.append(res.stdout.split())
    assert hashes[0] == hashes[1] == hashes[2]
    assert len(set(hashes[0])) == 4


def check_batch_grad(d: dict, precision: str, options: Options, n: int):
    m, g, ffi, lib = built(d, precision, options)
    dtype, M = DTYPES[precision], c_model(m.name)
    w = ffi.new(f"{M}_params *")
    xs = ffi.new(f"{M}_inputs[{n}]")
    samples = [inputs_for(d, precision, 10 + s) for s in range(n)]
    _fill(ffi, w, m.stored, samples[0], dtype)
    for s in range(n):
        _fill(ffi, xs[s], m.inputs, samples[s], dtype)
        for p in m.stored:
            samples[s][p.name] = samples[0][p.name]
    per = [oracle.evaluate(d, samples[s], np.float64) for s in range(n)]
    loss_name = m.output("loss")
    results = {}
    for nthreads in (1, 2, 3):
        ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(nthreads))
        grad = ffi.new(f"{M}_params *")
        loss = ffi.new("real *")
        for attempt in range(2):
            array_view(ffi, grad, dtype)[:] = np.nan
            loss[0] = float("nan")
            getattr(lib, f"{M}_batch_grad")(w, xs, n, nthreads, ws, grad, loss)
            raw = bytes(ffi.buffer(grad)) + bytes(ffi.buffer(loss))
            if attempt:
                assert raw == results[nthreads], "not bitwise reproducible"
            results[nthreads] = raw
        for p in m.params:
            gname = m.param_gradient(p.name).name
            want = np.mean([per[s][gname].ravel() for s in range(n)], axis=0)
            got = array_view(ffi, getattr(grad, c_array(p.name)), dtype)
            assert rel_err(got, want) <= 10 * TOL[precision], (p.name, nthreads)
        for c in m.stored:
            if c.role == "const":           # no gradient: its field of *grad is 0
                assert not array_view(ffi, getattr(grad, c_array(c.name)), dtype).any(), c.name
        if loss_name:
            want = np.mean([per[s][loss_name].sum() for s in range(n)])
            assert rel_err(np.array([loss[0]]), np.array([want])) <= 10 * TOL[precision]


@pytest.mark.parametrize("n", [5, 35])
@pytest.mark.parametrize("name", ["cnn_hand", "ops_map", "const_hand"])
def test_batch_predict_and_sgd_update(kernel_cache, name, n):
    """Predictions over 1-3 threads: 5 samples (one group, at half the width where it fits,
    which the threads then share), 35 (whole groups, and 3 samples shared at 1 and 2
    threads)."""
    d, precision = hand(name), "f64"
    m, g, ffi, lib = built(d, precision)
    dtype, M = np.float64, c_model(m.name)
    pred = m.output("prediction") or m.chain[-1].name
    size = ir.size(m.arrays[pred].shape)
    w = ffi.new(f"{M}_params *")
    xs = ffi.new(f"{M}_inputs[{n}]")
    samples = [inputs_for(d, precision, 40 + s) for s in range(n)]
    _fill(ffi, w, m.stored, samples[0], dtype)
    for s in range(n):
        _fill(ffi, xs[s], m.inputs, samples[s], dtype)
        for p in m.stored:
            samples[s][p.name] = samples[0][p.name]
    out = ffi.new(f"real[{n * size}]")
    wants = [oracle.evaluate(d, samples[s], np.float64, forward_only=True)[pred]
             for s in range(n)]
    for nthreads in (1, 2, 3):
        array_view(ffi, out, dtype)[:] = np.nan
        ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(nthreads))
        getattr(lib, f"{M}_batch_predict")(w, xs, n, nthreads, ws, out)
        got = array_view(ffi, out, dtype).reshape(n, size)
        for s in range(n):
            assert rel_err(got[s], wants[s]) <= 1e-12, (nthreads, s)
    # sgd: w <- w - lr * grad, on the params (a const is left as it is, even where *grad is
    # not 0 in its field)
    grad = ffi.new(f"{M}_params *")
    gv = array_view(ffi, grad, dtype)
    gv[:] = np.linspace(-1, 1, gv.size)
    trained = np.zeros(gv.size, bool)
    for p in m.params:
        f = ffi.offsetof(f"{M}_params", c_array(p.name)) // np.dtype(dtype).itemsize
        trained[f:f + ir.size(p.shape)] = True
    assert trained.any() and (trained.all() == (len(m.params) == len(m.stored)))
    before = array_view(ffi, w, dtype).copy()
    getattr(lib, f"{M}_sgd_update")(w, grad, 0.25)
    np.testing.assert_array_equal(array_view(ffi, w, dtype),
                                  np.where(trained, before - 0.25 * gv, before))
    # with momentum: vel <- 0.5 vel + grad, w <- w - 0.25 vel (twice: vel starts at zero)
    vel = ffi.new(f"{M}_params *")
    w_np, v_np = array_view(ffi, w, dtype).copy(), np.zeros(gv.size)
    for _ in range(2):
        getattr(lib, f"{M}_sgd_momentum_update")(w, grad, vel, 0.25, 0.5)
        v_np = np.where(trained, 0.5 * v_np + gv, 0)
        w_np = w_np - 0.25 * v_np
    np.testing.assert_allclose(array_view(ffi, vel, dtype), v_np, rtol=1e-15)
    np.testing.assert_allclose(array_view(ffi, w, dtype), w_np, rtol=1e-15)
    np.testing.assert_array_equal(array_view(ffi, w, dtype)[~trained], before[~trained])


# ---------------------------------------------------------------------------------------------
# the generated text

def built_warning_free(d: dict, precision: str):
    """The module of the generated C built with -Wall -Wextra -Werror: every build of a test run
    is (conftest sets PROVED_KERNELS_WERROR=1, extract/emit/build.py), so this is the module the
    oracle tests load, built once whichever test asks first."""
    assert os.environ.get(build.ENV_WERROR) == "1"
    return built(d, precision)


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", HAND)
def test_generated_c_compiles_with_warnings_as_errors(name, precision):
    m, g, ffi, lib = built_warning_free(hand(name), precision)
    assert hasattr(lib, f"{c_model(m.name)}_forward")


def test_a_warning_fails_a_build_of_the_test_run(tmp_path):
    """What the test above relies on: an unused static function in the generated C (a warning
    under -Wall) fails the build."""
    m = dump.parse(hand("dot_hand"))
    g = generate(m, "f32")
    c = f"{c_model(m.name)}.c"
    files = {**g.files, c: g.files[c] + "\nstatic int pk_unused_helper(int a) { return a; }\n"}
    with pytest.raises(Exception, match="pk_unused_helper|unused"):
        build.build(m.name, "f32", files, g.cdef)


ALLOC = re.compile(r"\b(malloc|calloc|realloc|free|new|delete|alloca|cudaMalloc\w*)\b")


@pytest.mark.parametrize("name", HAND)
def test_generated_code_never_allocates(name):
    g = generate(dump.parse(hand(name)), "f32")
    for fname, text in g.files.items():
        assert not ALLOC.search(text), (fname, ALLOC.search(text).group(0))
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S).replace("typedef float real;", "")
        assert not re.search(r"\b(float|double)\b", code), fname   # one scalar type: real


def test_generated_code_shapes_are_constants():
    g = generate(dump.parse(hand("cnn_hand")), "f64")
    c = g.files["model_cnn.c"]
    assert "#define model_cnn_SIZE_a2_k1 150" in g.files["model_cnn.h"]
    assert "static void model_cnn_forward_a3_c11(const real *restrict a3_inp," in c
    assert "real *restrict a3_c11)" in c
    assert "/* ==== forward: a3_c11, chain binding 1 of 9;" in c
    assert re.search(r"for \(int \w+ = 0; \w+ < 24; \w+\+\+\)", c)


def test_random_dumps_compile_with_warnings_as_errors(tmp_path):
    for seed in range(10):
        d = dumpgen.random_dump(seed, model=f"rnd{seed}")
        m = dump.parse(d)
        g = generate(m, "f32", ALLOW_RECOMPUTE)
        for fname, text in g.files.items():
            (tmp_path / fname).write_text(text)
        build.compile_c(tmp_path / f"{c_model(m.name)}.c", tmp_path / f"{c_model(m.name)}.o")


# ---------------------------------------------------------------------------------------------
# the dumps printed by the Agda spec (build/dump, or their golden copies), when present

ROOT = Path(__file__).resolve().parent.parent
REAL = {name: [p for p in (ROOT / "build" / "dump" / f"{name}.json",
                           ROOT / "tests" / "golden" / "dump" / f"{name}.json") if p.exists()]
        for name in ("dot", "chain", "cnn", "ops")}


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("name", sorted(REAL))
def test_spec_dumps_match_oracle(kernel_cache, name, precision):
    if not REAL[name]:
        pytest.skip(f"no dump of {name} (run `make dump`)")
    d = json.loads(REAL[name][0].read_text())
    check_against_oracle(d, precision)          # the default rule must accept the spec's dumps


@pytest.mark.parametrize("name", sorted(REAL))
def test_spec_dumps_compile_with_warnings_as_errors(tmp_path, name):
    if not REAL[name]:
        pytest.skip(f"no dump of {name} (run `make dump`)")
    d = json.loads(REAL[name][0].read_text())
    for precision in ("f32", "f64"):
        m, g, ffi, lib = built_warning_free(d, precision)
        for fname, text in g.files.items():
            assert not ALLOC.search(text), fname

"""extract/emit/build.py and the CLI: the build cache (concurrent builders, cache hits, the
PROVED_KERNELS_CACHE override), nvcc compiling the CUDA, the command line."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)
from extract.emit import build
from extract.ir import dump
from extract import paths
from extract.passes.lower import Options
from extract.emit.sources import default_block, generate

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
HAND = sorted(p.stem for p in DATA.glob("*.json"))

BUILDER = """
import sys
from extract.emit import build
ffi, lib = build.load("dot", "f64", dump=sys.argv[1])
w = ffi.new("model_dot_params *"); x = ffi.new("model_dot_inputs *")
v = ffi.new("model_dot_values *")
for k in range(5):
    w.a1_a[k] = k + 1; w.a1_b[k] = 2 * k
lib.model_dot_forward(w, x, v)
print(v.a1_r[0], lib.model_dot_workspace_size(3))
"""


def test_two_processes_building_at_once_both_succeed(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "PROVED_KERNELS_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, str(DATA / "dot_hand.json")],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    r = sum((k + 1) * 2 * k for k in range(5))
    assert outs[0][0] == outs[1][0]
    assert float(outs[0][0].split()[0]) == r
    entries = sorted(e.name for e in cache.iterdir())
    built = [e for e in entries if e.startswith("_pk_dot_f64_") and not e.endswith(".lock")]
    assert len(built) == 1 and ".tmp" not in built[0], entries
    assert (cache / built[0] / "ok").exists()


def test_cache_hit_does_not_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(tmp_path))
    assert build.cache_dir() == tmp_path
    m = dump.load(DATA / "chain_hand.json")
    g = generate(m, "f64")
    build.build(m.name, "f64", g.files, g.cdef)
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("_pk_")]
    stamp = (d / "ok").stat().st_mtime_ns
    so = [p for p in d.iterdir() if p.suffix == ".so"]
    assert len(so) == 1
    build.build(m.name, "f64", g.files, g.cdef)
    assert (d / "ok").stat().st_mtime_ns == stamp
    # other flags: another module
    key1 = build._key(g.files, g.cdef, build.CFLAGS)
    assert key1 != build._key(g.files, g.cdef, build.CFLAGS + ["-g"])
    assert key1 != build._key({**g.files, "model_chain.c": g.files["model_chain.c"] + "\n"},
                              g.cdef, build.CFLAGS)


def test_a_failed_build_leaves_nothing_in_the_cache(tmp_path, monkeypatch):
    m = dump.load(DATA / "chain_hand.json")
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(tmp_path))
    g = generate(m, "f64")
    broken = {**g.files, "model_chain.c": g.files["model_chain.c"] + "\nthis is not C;\n"}
    from extract.emit.gcc import BuildError
    with pytest.raises(BuildError) as info:
        build.build(m.name, "f64", broken, g.cdef)
    # one line naming the model, gcc's first error and the file holding the whole log
    message = str(info.value)
    assert "\n" not in message and message.startswith("gcc failed building model 'chain'")
    assert f"full log: {info.value.log}" in message and "this is not C" in \
        info.value.log.read_text()
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == ["logs"]
    # an error inside a kernel names its binding, as the user wrote it
    c = g.files["model_chain.c"]
    kernel = re.search(r"static void (model_chain_forward_a\d+_\w+?)\(", c)
    at = c.index("{", kernel.end()) + 1
    with pytest.raises(BuildError, match=r"model 'chain' \(f64\), binding \w+:"):
        build.build(m.name, "f64", {**g.files, "model_chain.c": c[:at] + " not C; " + c[at:]},
                    g.cdef)
    import shutil
    if shutil.which("g++") is not None:                     # the CUDA on the host, likewise
        from extract.check import cuda_host
        cu = next(f for f in g.files if f.endswith(".cu"))
        with pytest.raises(RuntimeError, match="g\\+\\+ failed"):
            cuda_host.build_host(m.name, "f64", {**g.files, cu: g.files[cu] + "\nnot C++;\n"},
                                 g.cdef)
        assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == ["logs"]


def test_flags_exclude_value_changing_fast_math():
    flags = " ".join(build.CFLAGS)
    for bad in ("-ffast-math", "-fassociative-math", "-ffinite-math-only", "-Ofast"):
        assert bad not in flags
    for good in ("-O3", "-fopenmp", "-fno-math-errno", "-fno-trapping-math"):
        assert good in flags
    # after Python's own CFLAGS (cffi puts those first), so that its -g does not hold
    assert build.CFLAGS[-1] == "-g0"


def test_cffi_command_line_leaves_signed_overflow_undefined():
    """cffi puts Python's CFLAGS (CPython: -fwrapv) before ours; with -fwrapv in force gcc
    cannot widen the int index arithmetic and the CNN step runs 2x slower (bench/PROFILE.md).
    Ask gcc which setting wins on the command line cffi uses."""
    import sysconfig
    py = (sysconfig.get_config_var("CFLAGS") or "").split()
    out = subprocess.run(["gcc", *py, *build.CFLAGS, "-Q", "--help=common"],
                         capture_output=True, text=True, check=True).stdout
    state = [ln.split()[-1] for ln in out.splitlines() if ln.split()[:1] == ["-fwrapv"]]
    assert state == ["[disabled]"]


@pytest.mark.skipif(not build.nvcc_available(), reason="nvcc not installed")
@pytest.mark.parametrize("name", ["dot_hand", "ops_slide", "cnn_hand"])
def test_nvcc_compiles_the_cuda(tmp_path, name):
    m = dump.load(DATA / f"{name}.json")
    g = generate(m, "f32")
    for fname, text in g.files.items():
        (tmp_path / fname).write_text(text)
    obj = build.compile_cuda(tmp_path / f"{c_model(m.name)}.cu",
                             tmp_path / f"{c_model(m.name)}_cu.o")
    assert obj.stat().st_size > 0
    nm = subprocess.run(["nm", str(obj)], capture_output=True, text=True).stdout
    for entry in ("forward", "backward", "workspace_size", "batch_grad", "sgd_update",
                  "sgd_momentum_update", "batch_predict"):
        assert f"T {c_model(m.name)}_cuda_{entry}" in nm, entry


def test_cli_writes_sources_and_show_prints_c(tmp_path):
    out = tmp_path / "gen"
    cmd = [sys.executable, "-m", "extract", "ops_map", "--dump", str(DATA / "ops_map.json"),
           "--out", str(out), "--no-build", "--precision", "f64"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    names = sorted(p.name for p in out.iterdir())
    assert names == ["model_ops_map.c", "model_ops_map.cu", "model_ops_map.h",
                     "ops_map.dump.json"]
    assert json.loads((out / "ops_map.dump.json").read_text()) == \
        json.loads((DATA / "ops_map.json").read_text())          # for python -m extract.check.validate
    assert "typedef double real;" in (out / "model_ops_map.h").read_text()
    stamp = (out / "model_ops_map.c").stat().st_mtime_ns
    res = subprocess.run(cmd + ["--show"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0
    assert res.stdout == (out / "model_ops_map.c").read_text()          # plain text: not a tty
    assert "\x1b[" not in res.stdout
    assert (out / "model_ops_map.c").stat().st_mtime_ns == stamp         # unchanged: not rewritten
    # --out naming a file: one line, no traceback
    res = subprocess.run(cmd[:-5] + ["--out", str(out / "model_ops_map.h"), "--no-build"], cwd=ROOT,
                         capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.startswith("error: --out ") \
        and "is a file, not a directory" in res.stderr, res.stderr


def test_cli_writes_under_the_current_directory(tmp_path):
    """Run from anywhere, the default output is ./build/gen/PRECISION there, never the
    checkout's; --show alone prints and writes nothing."""
    cmd = [sys.executable, "-m", "extract", "ops_map", "--dump", str(DATA / "ops_map.json"),
           "--no-build"]
    res = subprocess.run(cmd + ["--show"], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0 and "model_ops_map_forward" in res.stdout
    assert list(tmp_path.iterdir()) == []
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    out = Path("build") / "gen" / "f32"
    assert res.stdout == f"wrote {out / 'model_ops_map.h'}, {out / 'model_ops_map.c'}, " \
                         f"{out / 'model_ops_map.cu'}, {out / 'ops_map.dump.json'}\n"
    assert sorted(p.name for p in (tmp_path / out).iterdir()) == \
        ["model_ops_map.c", "model_ops_map.cu", "model_ops_map.h", "ops_map.dump.json"]


def test_cli_builds_by_default(tmp_path):
    env = {**os.environ, "PROVED_KERNELS_CACHE": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, "-m", "extract", "chain", "--dump",
                          str(DATA / "chain_hand.json"), "--out", str(tmp_path / "gen")],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert any(p.name.startswith("_pk_chain_f32_") for p in (tmp_path / "cache").iterdir())


def test_default_dump_path_and_make_fallback(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "ROOT", tmp_path)      # where locate looks
    (tmp_path / "build" / "dump").mkdir(parents=True)
    there = tmp_path / "build" / "dump" / "dot.json"
    there.write_text((DATA / "dot_hand.json").read_text())
    assert build.dump_path("dot") == there
    # other dumps are there, so a name that is none of them is a typo: no `make dump` for it
    monkeypatch.setattr(build, "_make_dump", lambda: pytest.fail("ran make"))
    with pytest.raises(ValueError, match=r"unknown model 'cnn': not a built-in model \(dot\)"):
        build.dump_path("cnn")
    assert build.dump_path("cnn", make=False) == tmp_path / "build" / "dump" / "cnn.json"
    # none built: `make dump` would make them, but cannot here (no Makefile): one clear error
    there.unlink()
    with pytest.raises(FileNotFoundError, match="make dump"):
        build.dump_path("cnn")


def test_make_fallback_shows_its_progress(tmp_path, monkeypatch, capsys):
    """The first call in a checkout without dumps runs `make dump`, which can take minutes (or
    wait for another build): its `build-dump:` lines reach stderr as they come; the rest of its
    output is kept for an error."""
    monkeypatch.setattr(build, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "ROOT", tmp_path)      # where locate looks
    (tmp_path / "Spec").mkdir()
    (tmp_path / "Makefile").write_text(
        "dump:\n"
        "\t@echo 'build-dump: another Agda build is running in this checkout; waiting' >&2\n"
        "\t@echo 'Checking Spec.Main'\n"
        "\t@mkdir -p build/dump && echo 'build-dump: wrote build/dump/dot.json' >&2\n"
        f"\t@cp '{DATA / 'dot_hand.json'}' build/dump/dot.json\n")
    assert build.dump_path("dot") == tmp_path / "build" / "dump" / "dot.json"
    err = capsys.readouterr().err
    assert err == ("build-dump: another Agda build is running in this checkout; waiting\n"
                   "build-dump: wrote build/dump/dot.json\n")
    (tmp_path / "build" / "dump" / "dot.json").unlink()
    (tmp_path / "Makefile").write_text("dump:\n\t@echo 'Checking Spec.Main'; false\n")
    with pytest.raises(FileNotFoundError, match=r"did not create one:\nChecking Spec.Main"):
        build.dump_path("dot")
    assert capsys.readouterr().err == ""


def test_cli_unknown_name_is_one_line_and_runs_no_make(tmp_path):
    res = subprocess.run([sys.executable, "-m", "extract", "mlp2", "--no-build", "--out",
                          str(tmp_path / "o")], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 1
    assert res.stderr.startswith("error: unknown model 'mlp2': not a built-in model (")
    assert res.stderr.count("\n") == 1 and not (tmp_path / "o").exists()


@pytest.mark.skipif(not build.nvcc_available(), reason="nvcc not installed")
def test_nvcc_compiles_random_dump_cuda(tmp_path):
    import dumpgen
    d = dumpgen.random_dump(3, depth=4, n_chain=3, model="rnd3")
    m = dump.parse(d)
    g = generate(m, "f64", Options(recompute_limit=2 ** 62))
    for fname, text in g.files.items():
        (tmp_path / fname).write_text(text)
    assert build.compile_cuda(tmp_path / "model_rnd3.cu", tmp_path / "rnd3.o").stat().st_size > 0


@pytest.mark.skipif(not build.nvcc_available(), reason="nvcc not installed")
def test_nvcc_compiles_the_spec_cnn(tmp_path):
    path = ROOT / "build" / "dump" / "cnn.json"
    if not path.exists():
        path = ROOT / "tests" / "golden" / "dump" / "cnn.json"
    g = generate(dump.load(path), "f32")
    for fname, text in g.files.items():
        (tmp_path / fname).write_text(text)
    assert build.compile_cuda(tmp_path / "model_cnn.cu", tmp_path / "cnn.o").stat().st_size > 0


def test_cli_extraction_error_exits_1_and_writes_nothing(tmp_path):
    """A binding that would need a temporary array: y[i][j] = (sum_t a[t][j]) * c[i]."""
    import json

    import dumpgen as g
    a, c = g.var("a", [3, 4]), g.var("c", 3)
    y = g.imap(3, lambda i: g.imaps(4, lambda j: g.mul(
        g.sum_(3, lambda t: g.sels(g.sel(a, t), j)), g.sels(c, i))))
    d = g.make_dump("tmp", [("a", [3, 4], "param"), ("c", 3, "param")], [("y", y)],
                    ("y", g.one([3, 4])),
                    [("y", g.one([3, 4])), ("a", g.zero([3, 4])), ("c", g.zero(3))])
    src = tmp_path / "tmp.json"
    src.write_text(json.dumps(d))
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "extract", "tmp", "--dump", str(src), "--out", str(out),
           "--no-build"]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "binding 'y'" in lines[0] and "temporary array" in lines[0]
    assert not out.exists()
    res = subprocess.run(cmd + ["--recompute-limit", "3"], cwd=ROOT, capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    assert (out / "model_tmp.c").exists()


# ---------------------------------------------------------------------------------------------
# portable C: warning-free under GCC and Clang, with and without -march=native

SPEC = {name: next((p for p in (ROOT / "build" / "dump" / f"{name}.json",
                                ROOT / "tests" / "golden" / "dump" / f"{name}.json")
                    if p.exists()), None) for name in ("cnn", "ops", "zoo/mlp")}
SPEC["pad_conv"] = ROOT / "tests" / "data" / "pad_conv.json"   # bounded loops, written-out ends
# lane kernels whose forward pass reads no input and backward pass no chain value, once
# extract/passes/inline.py has moved those reads into other kernels
SPEC["inline_hand"] = ROOT / "tests" / "data" / "inline_hand.json"
# consts: with parameters, and alone (nothing to train: the unused arguments)
SPEC["const_hand"] = ROOT / "tests" / "data" / "const_hand.json"
SPEC["const_only"] = ROOT / "tests" / "data" / "const_only.json"
# sqrt (version 4): the vsqrt and hsqrt helpers, and sqrt of a parameter in a vector statement
SPEC["sqrt"] = ROOT / "tests" / "data" / "sqrt.json"


def _warning_flags(cc: str, march: bool) -> list:
    """The build's flags for a warning check: -march=native kept or dropped, and the
    optimization level each compiler's warnings need (see the test below)."""
    flags = [f for f in build.CFLAGS if march or f != "-march=native"]
    if cc == "gcc" and march:
        return flags
    return [("-O1" if cc == "gcc" else "-O0") if f == "-O3" else f for f in flags]


PLANTED = """typedef float v16 __attribute__((vector_size(64)));
v16 add(v16 a, v16 b) { return a + b; }
static int unused_helper(int x) { return x + 1; }
int maybe_if(const int *p) { int y; if (*p) y = 1; return y; }
extern void use(int);
void maybe_loop(int n) { int y; for (int i = 0; i < n; i++) y = i; use(y); }
"""


@pytest.mark.parametrize("march", [True, False], ids=["native", "generic"])
@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_the_cheaper_warning_checks_still_warn(tmp_path, cc, march):
    """At the optimization level the warning check compiles each variant at, each compiler
    still reports an unused static helper and a variable read uninitialized on one path, and
    GCC without -march=native a 64-byte vector passed by value (-Wpsabi)."""
    import shutil
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed (scripts/setup.sh --test installs it)")
    src = tmp_path / "planted.c"
    src.write_text(PLANTED)
    flags = [f for f in _warning_flags(cc, march) if f != "-fopenmp"]
    res = subprocess.run([cc, *flags, "-Wall", "-Wextra", "-c", str(src), "-o",
                          str(tmp_path / "planted.o")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "unused_helper" in res.stderr and "-Wunused-function" in res.stderr, res.stderr
    # GCC's flow analysis (from -O1) finds the loop's y, Clang's front end the branch's
    where = {"gcc": "maybe_loop", "clang": "maybe_if"}[cc]
    assert re.search(rf"In function .{where}.|{where}", res.stderr) and \
        "uninitialized" in res.stderr, res.stderr
    if cc == "gcc" and not march:
        assert "-Wpsabi" in res.stderr, res.stderr


@pytest.mark.parametrize("lanes", [8, 16])
@pytest.mark.parametrize("march", [True, False], ids=["native", "generic"])
@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_generated_c_is_warning_free_under_gcc_and_clang(tmp_path, cc, march, lanes):
    """The build's own flags (extract/emit/build.py) with -Wall -Wextra -Werror, -march=native kept
    or dropped: without it the vreal helpers draw GCC's and Clang's ABI note (-Wpsabi), and
    Clang flags unused static helpers (the MLP adds every parameter gradient in its kernel, so
    it calls no M_add_samples). Both lane counts and both register block limits, whatever
    this machine's: 8 lanes with this machine's block limit (``default_block``: 16 with
    AVX-512, else 8), 16 lanes with the other one. With PROVED_KERNELS_WERROR=1 (the test
    run's, at 8 lanes), GCC's variant that is this machine's default build loads that build
    from the kernel cache instead, compiled once for every test of the run with these
    warnings as errors.

    Only GCC with the build's own flags (-O3 -march=native, what every build compiles) runs
    the whole optimizer: GCC without -march=native runs at -O1, where its flow warnings
    (-Wmaybe-uninitialized) and -Wpsabi are issued, at a fifth of -O3's time on this C; Clang
    at -O0, its warnings being its front end's and code generation's
    (test_the_cheaper_warning_checks_still_warn plants each kind)."""
    import shutil
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed (scripts/setup.sh --test installs it)")
    flags = _warning_flags(cc, march)
    assert ("-march=native" in flags) == march
    other = {8: 16, 16: 8}
    block = default_block() if lanes == 8 else other[default_block()]
    for name, path in SPEC.items():
        if path is None:
            pytest.skip(f"no dump of {name} (run `make dump`)")
        m = dump.load(path)
        for precision in ("f32", "f64"):
            d = tmp_path / f"{name.replace('/', '_')}_{precision}"
            d.mkdir()
            g = generate(m, precision, Options(lanes=lanes, block=block))
            if cc == "gcc" and march and os.environ.get(build.ENV_WERROR) == "1" and \
                    g.files == generate(m, precision, Options()).files:
                # this machine's own build of the model, which every test of the run compiles
                # with -Werror (tests/conftest.py): one build, shared through the kernel cache
                build.build(m.name, precision, g.files, g.cdef)
                continue
            for fname, text in g.files.items():
                (d / fname).write_text(text)
            cmd = [cc, *flags, *build.WARNINGS, "-c", str(d / f"{c_model(m.name)}.c"), "-o",
                   str(d / f"{c_model(m.name)}.o")]
            res = subprocess.run(cmd, capture_output=True, text=True)
            assert res.returncode == 0 and not res.stderr, f"{' '.join(cmd)}:\n{res.stderr}"


# Names the kernels use as their own locals, or that the templates define, that a model may
# still take: a model named after them compiles warning-free (C at both lane widths, and the
# CUDA on the host). A template that starts to use one of them where a model's names are in
# scope fails here, and the name belongs in extract.ir.dump.C_KEYWORDS.
FREE_NAMES = [
    ("lane", "tail", "each", "first", "whole", "rest", "groups", "gs", "ws", "n", "nt",
     "nthreads", "me"),
    ("team", "scratch", "size", "stride", "tot", "lo", "hi", "acc", "acc0", "grad", "lr",
     "out", "g"),
    ("s", "t", "q", "v", "xs", "vs", "sh", "shared", "px", "tid", "grid", "offset",
     "order"),
]


@pytest.mark.agda
@pytest.mark.parametrize("names", [*FREE_NAMES, *(n[6:] + n[:6] for n in FREE_NAMES)],
                         ids=lambda n: n[0])      # each name as a declaration and a binding
def test_a_model_may_take_the_kernels_other_names(tmp_path, names):
    import shutil
    from extract.check import cuda_host
    from extract.front.frontend import compile_model
    from test_frontend_cli import MISSING

    if MISSING is not None:
        pytest.skip(str(MISSING))
    x, y, k, b, w, c, z, p, h, e, o, m, loss = names
    text = f"""model names
input  {x} : 2x6x6
target {y} : 3
param  {k} : 2x2x3x3
param  {b} : 2
param  {w} : 3x2x4x4
param  {c} : 3
{z} = conv2d({x}, {k}, {b})
{p} = logistic({z})
{h} = exp({p})
{e} = dense({w}, {h}, {c})
output {o} = relu({e})
{m} = maxall({o})
loss {loss} = sqerr({o}, {y}) + {m}
"""
    m_ = dump.parse(json.loads(compile_model(text)))
    for lanes in (8, 16):
        g = generate(m_, "f32", Options(lanes=lanes, block=lanes))
        d = tmp_path / f"l{lanes}"
        d.mkdir()
        for fname, src in g.files.items():
            (d / fname).write_text(src)
        cmd = ["gcc", *build.CFLAGS, *build.WARNINGS, "-fsyntax-only", str(d / "model_names.c")]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0 and not res.stderr, f"{' '.join(cmd)}:\n{res.stderr}"
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    cuda_host.compile_host(tmp_path / "cuda", g.files)


def test_loading_a_model_again_does_not_generate_its_sources_again(tmp_path, monkeypatch):
    """build.load remembers which module a dump (its hash), precision and options gave: the
    second load imports it without generating (seconds for a large model); other options, or
    a module gone from the cache, generate again."""
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(tmp_path))
    from extract.emit import sources
    calls = []
    real = sources.generate

    def counting(m, precision, options=None):
        calls.append((m.name, precision, options))
        return real(m, precision, options)

    monkeypatch.setattr(sources, "generate", counting)
    path = str(DATA / "dot_hand.json")
    ffi, lib = build.load("dot", "f64", dump=path)
    assert len(calls) == 1
    ffi2, lib2 = build.load("dot", "f64", dump=path)
    assert len(calls) == 1 and lib2 is lib
    build.load("dot", "f32", dump=path)
    build.load("dot", "f64", dump=path, options=Options(lanes=16))
    assert [c[1] for c in calls] == ["f64", "f32", "f64"]
    # an index naming a module that is no longer there: generated and built again
    (index,) = [p for p in (tmp_path / "generated").iterdir()
                if p.read_text().startswith("_pk_dot_f64_") and
                build._generated_index(dump.load(path), "f64", Options()) == p]
    index.write_text("_pk_dot_f64_gone\n")
    build.load("dot", "f64", dump=path)
    assert len(calls) == 4


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_a_split_build_is_warning_free_and_gives_the_whole_builds_values(tmp_path, monkeypatch,
                                                                         cc):
    """A model whose kernels' C is past ``sources.SPLIT_BYTES`` is built from translation units
    (the entry points, then parts of the kernels: extract/emit/build.py compiles them in parallel
    and links one module): each part compiles warning-free (the build's flags, -Werror; gcc
    and Clang), the C file ``M.c`` stays whole, and the split module computes what the whole
    one does (the hand-written CNN: the one-sample forward and backward, the batch gradients
    through the lane kernels)."""
    import shutil
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} not installed (scripts/setup.sh --test installs it)")
    from extract.emit import sources
    m = dump.load(DATA / "cnn_hand.json")
    whole = generate(m, "f64")
    assert whole.parts == {}
    monkeypatch.setattr(sources, "SPLIT_BYTES", 3000)
    g = generate(m, "f64")
    assert g.files == whole.files and len(g.parts) > 3
    assert sum("static void" in t for f, t in g.parts.items() if not f.endswith("_main.c")) == 0
    for f, text in {**g.files, **g.parts}.items():
        (tmp_path / f).write_text(text)
    # GCC: the split build below compiles each part with -Werror in a test run
    # (PROVED_KERNELS_WERROR=1); otherwise, and with Clang, each part here
    for f in g.parts if cc == "clang" or os.environ.get(build.ENV_WERROR) != "1" else ():
        cmd = [cc, *build.CFLAGS, *build.WARNINGS, "-c", str(tmp_path / f), "-o",
               str(tmp_path / f"{f}.o")]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0 and not res.stderr, f"{' '.join(cmd)}:\n{res.stderr}"
    if cc == "clang":
        return
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(build.ENV_JOBS, "2")
    import numpy as np
    out = []
    for gen in (whole, g):
        ffi, lib = build.build(m.name, "f64", gen.files, gen.cdef, parts=gen.parts)
        M = c_model(m.name)
        rng = np.random.default_rng(0)
        w, xs = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs[]", 20)
        v, gr = ffi.new(f"{M}_values *"), ffi.new(f"{M}_grads *")
        for cdata, lo, hi in [(w, -0.5, 0.5), *((xs[i], 0, 1) for i in range(20))]:
            for name in dir(cdata):
                arr = getattr(cdata, name)
                for k in range(len(arr)):
                    arr[k] = rng.uniform(lo, hi)
        getattr(lib, f"{M}_forward")(w, xs, v)
        getattr(lib, f"{M}_backward")(w, xs, v, gr)
        # the batch entry point: the lane kernels, a group of 8 and one of 2 per thread
        ws = ffi.new("char[]", getattr(lib, f"{M}_workspace_size")(2))
        grad, loss = ffi.new(f"{M}_params *"), ffi.new("double *")
        getattr(lib, f"{M}_batch_grad")(w, xs, 20, 2, ws, grad, loss)
        out.append([[list(getattr(c, n)) for n in dir(c)] for c in (v, gr, grad)] + [loss[0]])
    assert out[0] == out[1]
    assert len([p for p in (tmp_path / "cache").iterdir() if p.is_dir()
                and p.name.startswith(f"_pk_{m.name}_f64_")]) == 2

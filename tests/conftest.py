"""Shared test options and helpers.

``--update-golden`` rewrites the golden generated sources under tests/golden/ instead of
comparing against them (review the diff before committing).

One kernel cache per test run: the first thing the run does (``pytest_configure``, in the
controller under pytest-xdist) is to make a fresh directory and point ``PROVED_KERNELS_CACHE``
at it, so every test, every xdist worker (they inherit the environment) and every subprocess
a test starts (``python -m runtime ...``) builds a model once and then loads it from there, and
nothing is read from or written to the user's own cache (``~/.cache/proved-kernels``).
``extract.emit.build`` builds under a file lock and publishes with an atomic rename, so workers that
ask for the same module at once build it once. ``PK_TEST_KERNEL_CACHE=DIR`` uses ``DIR``
instead (kept between runs: the cache is keyed by the sources, flags and tools, so a second run
loads what the first built). The ``kernel_cache`` fixture names that directory.

Parallel runs (``make test``: ``pytest -n auto``, pytest-xdist): a test marked ``serial`` (it
measures time or uses every core; the marker is declared in pyproject.toml) runs while no other
test does: every test takes a shared lock around its run and a ``serial`` one an exclusive lock
(with writer priority), see ``_RunLock``. The ONNX summary at the end is counted from the test
reports, which the workers send to the controller, so it prints the same with and without xdist.

Lanes: the run sets ``PROVED_KERNELS_LANES=8`` (unless it is set already), so the suite
generates the same kernels, checks the same number of samples and takes the same time on
every machine; the processor's own default (16 float lanes on an AMD Zen 4 or 5,
``extract.emit.sources.default_lanes``) made a field validation of the 1000-class model
twice as long (19 samples against 11; 49.5 s against 24.9 s) and a warm 2-core run 20:55
against 16:55 (AMD Zen 4, 2026-12-03). The tests of
16 lanes ask for them by name (``Options(lanes=16)``: test_both_lane_counts_validate,
test_batch_grad_at_either_lane_count, the warning checks at 16, test_extract_lanes), and the
default's own rule is tested with the variable unset. ``PK_TEST_LANES=16`` runs the whole
suite at 16 lanes, ``PK_TEST_LANES=default`` at the processor's default.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from extract.ir.names import c_array, c_model  # noqa: F401 (the C names)

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ instead of comparing")


# ONNX's test cases (tests/test_onnx.py), counted per operator as they run: passed, skipped
# (with the importer's reason) and failed, printed at the end of the run (before pytest's
# short summary and counts). The item is only known where the test runs (an xdist worker):
# there each case's report gets a user property ("onnx_case", (op, outcome, why)); the
# controller (or the one process without xdist) counts the reports it is sent.
_ONNX_OUTCOMES: dict[str, dict] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if getattr(item, "originalname", None) not in ("test_onnx_node",
                                                    "test_onnx_pytorch_converted"):
        return
    # one outcome per case: the call's, or the setup's if the case stopped there
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return
    case = item.callspec.params["case"]
    op = (case.model.graph.node[0].op_type if item.originalname == "test_onnx_node"
          else "(pytorch-converted)")
    why = None
    if report.skipped and isinstance(report.longrepr, tuple):
        # "Skipped: not expressible: node 'n' (Op): what" -> "what"
        why = report.longrepr[2].removeprefix("Skipped: ").removeprefix("not expressible: ")
        why = why.split("): ", 1)[1] if why.startswith("node ") else why
    report.user_properties.append(("onnx_case", (op, report.outcome, why)))


def pytest_runtest_logreport(report):
    for key, value in report.user_properties:
        if key != "onnx_case":
            continue
        op, outcome, why = value
        counts = _ONNX_OUTCOMES.setdefault(op, {"passed": 0, "skipped": 0, "failed": 0,
                                                "why": set()})
        counts[outcome] += 1
        if why is not None:
            counts["why"].add(why)


def pytest_terminal_summary(terminalreporter):
    if not _ONNX_OUTCOMES:
        return
    w = terminalreporter.write_line
    w("ONNX test cases per operator (passed / skipped / failed):")
    for op in sorted(_ONNX_OUTCOMES, key=lambda o: (o.startswith("("), o)):
        c = _ONNX_OUTCOMES[op]
        w(f"  {op:<20} {c['passed']:>3} / {c['skipped']:>3} / {c['failed']:>3}")
        for why in sorted(c["why"]):
            w(f"      skipped: {why}")
    total = {k: sum(c[k] for c in _ONNX_OUTCOMES.values()) for k in ("passed", "skipped", "failed")}
    w(f"  {'all':<20} {total['passed']:>3} / {total['skipped']:>3} / {total['failed']:>3}")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


ENV_TEST_CACHE = "PK_TEST_KERNEL_CACHE"     # a kernel cache to keep between test runs
ENV_TEST_LANES = "PK_TEST_LANES"            # the suite's lane count: 8 (default), 16 or default
_WORKER = "PYTEST_XDIST_WORKER"                # set in an xdist worker's environment


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config):
    """The run's kernel cache and run lock (see the module docstring), made once by the
    controller (or the one process) and inherited by the workers through the environment."""
    if _is_worker(config) or os.environ.get(_WORKER):
        return
    keep = os.environ.get(ENV_TEST_CACHE)
    if keep:
        cache = Path(keep).resolve()
        cache.mkdir(parents=True, exist_ok=True)
    else:
        cache = Path(tempfile.mkdtemp(prefix="pk-test-kernels-"))
        config._pk_made_cache = cache
    config._pk_saved_cache = os.environ.get("PROVED_KERNELS_CACHE")
    os.environ["PROVED_KERNELS_CACHE"] = str(cache)
    # every build of the run, in a worker or a subprocess, fails on a warning (extract/emit/
    # build.py): the generated C is warning-free for every model the suite builds
    os.environ["PROVED_KERNELS_WERROR"] = "1"
    os.environ["PK_TEST_RUN_LOCK"] = str(Path(tempfile.mkdtemp(prefix="pk-test-lock-")))
    # one configuration on every machine (see the module docstring, "Lanes")
    lanes = os.environ.get(ENV_TEST_LANES, "8")
    if lanes not in ("8", "16", "default"):
        raise pytest.UsageError(f"${ENV_TEST_LANES} must be 8, 16 or default, not {lanes!r}")
    if lanes != "default" and not os.environ.get("PROVED_KERNELS_LANES"):
        config._pk_set_lanes = True
        os.environ["PROVED_KERNELS_LANES"] = lanes


def pytest_unconfigure(config):
    import shutil
    if _is_worker(config) or os.environ.get(_WORKER):
        return
    if not hasattr(config, "_pk_saved_cache"):
        return
    if getattr(config, "_pk_made_cache", None) is not None:
        shutil.rmtree(config._pk_made_cache, ignore_errors=True)
    shutil.rmtree(os.environ.pop("PK_TEST_RUN_LOCK", ""), ignore_errors=True)
    if getattr(config, "_pk_set_lanes", False):
        os.environ.pop("PROVED_KERNELS_LANES", None)
    if config._pk_saved_cache is None:
        os.environ.pop("PROVED_KERNELS_CACHE", None)
    else:
        os.environ["PROVED_KERNELS_CACHE"] = config._pk_saved_cache


class _RunLock:
    """A readers-writer lock between the processes of one run (fcntl.flock on two files): every
    test holds it shared while it runs, a ``serial`` test exclusively. The turnstile gives a
    waiting writer priority: once it waits, no new reader starts."""

    def __init__(self, directory: Path):
        import fcntl
        self.fcntl = fcntl
        self.turn = open(directory / "turnstile", "a+")
        self.rw = open(directory / "rw", "a+")

    def acquire(self, exclusive: bool):
        f = self.fcntl
        f.flock(self.turn, f.LOCK_EX)
        try:
            f.flock(self.rw, f.LOCK_EX if exclusive else f.LOCK_SH)
        finally:
            f.flock(self.turn, f.LOCK_UN)

    def release(self):
        self.fcntl.flock(self.rw, self.fcntl.LOCK_UN)


_run_lock: _RunLock | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist only (one process has nothing to wait for): the run lock around
    each test, exclusive for a ``serial`` one."""
    global _run_lock
    directory = os.environ.get("PK_TEST_RUN_LOCK")
    if not (_is_worker(item.config) and directory and sys.platform != "win32"):
        yield
        return
    if _run_lock is None:
        _run_lock = _RunLock(Path(directory))
    _run_lock.acquire(exclusive=item.get_closest_marker("serial") is not None)
    try:
        yield
    finally:
        _run_lock.release()


@pytest.fixture
def quick_builds(monkeypatch):
    """Kernels built at -O0 (a fifth of -O3's gcc time on a small
    model): for the tests of what an imported graph means (ONNX's node tests and the like,
    hundreds of one-node models, each built once), not of what the compiler makes of the C,
    which the zoo, numerics, lane and warning tests check at the build's own -O3. The cache
    key holds the flags, so these modules are never the -O3 ones; the runtime's table of
    loaded kernels is the test's own, so a later test never gets one of them."""
    return at_O0(monkeypatch)


def at_O0(mp) -> list:
    """What ``quick_builds`` does, on a ``pytest.MonkeyPatch`` (a fixture's, or a
    ``MonkeyPatch.context()`` around one load in a longer-lived fixture): -O0 flags and a
    table of loaded kernels of its own; returns the flags."""
    from extract.emit import build
    from runtime._kernels import Kernels
    flags = [("-O0" if f == "-O3" else f) for f in build.CFLAGS]
    assert flags != build.CFLAGS
    mp.setattr(build, "CFLAGS", flags)
    mp.setattr(Kernels, "_cache", {})
    return flags


@pytest.fixture(scope="session")
def kernel_cache() -> Path:
    """The run's kernel cache (PROVED_KERNELS_CACHE), shared by every test and worker."""
    return Path(os.environ["PROVED_KERNELS_CACHE"])


def spec_main() -> Path:
    """The Agda executable build/agda/Main, (re)built by scripts/build-dump.sh if stale."""
    import subprocess
    root = TESTS.parent
    r = subprocess.run([str(root / "scripts" / "build-dump.sh"), "--binary"], cwd=root,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-4000:]
    return root / r.stdout.strip()


@pytest.fixture(scope="session")
def agda_main() -> Path:
    """``spec_main()`` once per test run."""
    return spec_main()


# a stride-2 convolution and a dense layer: its input gradient sums a one-hot under the
# convolution's sums (tests of oracle.sum_inward and field._sum_of_one_hot)
STRIDED_MODEL = ("model strided\ninput x : 2x8x8\ntarget y : 3\nparam k : 4x2x3x3\nparam b : 4\n"
                 "param w : 3x4x4x4\nparam c : 3\nz = conv2d(x, k, b, 1, 2)\na = relu(z)\n"
                 "output o = dense(w, a, c)\nloss l = softmax_ce(o, y)\n")


def small_resnet20() -> str:
    """models/resnet20.model at a quarter of its channels and of its side: 4, 8, 16 channels on
    8×8, 4×4, 2×2 planes (input 3×8×8): every layer the zoo's has (stride-2 blocks with
    their 1×1 shortcuts, the residual scalars, global average pooling, the dense head) with
    256 times fewer multiply-adds, for the tests whose cost is the zoo model's size (the field
    evaluator against the oracle over the field: 560 s on the zoo's; the CUDA on the host in
    float64: 25 s; the zoo's under PK_TEST_ZOO=1)."""
    import re
    text = (TESTS.parent / "models" / "resnet20.model").read_text()
    text = "\n".join(re.sub(r"\s*--.*$", "", line) for line in text.splitlines()
                     if not line.startswith("--")) + "\n"
    channels = {"16": "4", "32": "8", "64": "16"}
    planes = {"32x32": "8x8", "16x16": "4x4", "8x8": "2x2"}

    def param(m):
        return m.group(1) + "x".join(channels.get(d, d) for d in m.group(2).split("x"))
    out = re.sub(r"(?m)^(param\s+\w+\s*:\s*)([\dx]+)", param, text)
    out = re.sub(r"(?m)^(input\s+x\s*:\s*)3x32x32", r"\g<1>3x8x8", out)
    out = re.sub(r"for ([oc]) : (\d+)", lambda m: f"for {m.group(1)} : {channels[m.group(2)]}", out)
    out = re.sub(r"\b(for|sum) i : (\d+x\d+)", lambda m: f"{m.group(1)} i : {planes[m.group(2)]}",
                 out)
    out = out.replace(") / 64", ") / 4")
    return out.replace("model resnet20", "model resnet20_small")


@pytest.fixture(scope="session")
def small_resnet20_dump(agda_main) -> dict:
    """The dump of ``small_resnet20()``, elaborated once per test run (per xdist worker)."""
    import json
    r = elaborate_text(agda_main, small_resnet20())
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    shapes = {c["name"]: c["shape"] for c in d["context"]}
    assert shapes["x"] == [3, [8, 8]] and shapes["k9b"] == [16, [16, [3, 3]]], shapes
    return d


def elaborate_text(main: Path, text: str):
    """``Main model -`` on a model file's text: the dump on stdout, or (status 1) the one-line
    error on stderr, naming the file ``-``."""
    import subprocess
    return subprocess.run([str(main), "model", "-"], input=text, capture_output=True, text=True,
                          timeout=120)


def every_dump() -> dict[str, Path]:
    """Every dump a test can run: the hand-built ones (tests/data), the spec's built-in ones
    (build/dump, else their golden copies) and the zoo's (build/dump/zoo); name -> path."""
    root = TESTS.parent
    dumps = {p.stem: p for p in sorted((TESTS / "data").glob("*.json"))}
    for name in ("dot", "chain", "cnn", "ops"):
        path = next((q for q in (root / "build" / "dump" / f"{name}.json",
                                 TESTS / "golden" / "dump" / f"{name}.json") if q.exists()), None)
        if path is not None:
            dumps[f"spec_{name}"] = path
    for path in sorted((root / "build" / "dump" / "zoo").glob("*.json")):
        dumps[f"zoo_{path.stem}"] = path
    return dumps


DTYPES = {"f32": np.float32, "f64": np.float64}


def array_view(ffi, cdata, dtype) -> np.ndarray:
    """A writable NumPy view of a cffi struct or array of reals."""
    return np.frombuffer(ffi.buffer(cdata), dtype=dtype)


def run_single(ffi, lib, model, values: dict, precision: str) -> dict:
    """Run M_forward and M_backward on one sample with NaN-filled outputs; name -> flat array."""
    dtype = DTYPES[precision]
    M = c_model(model.name)
    w, x = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs *")
    v, g = ffi.new(f"{M}_values *"), ffi.new(f"{M}_grads *")
    array_view(ffi, v, dtype)[:] = np.nan
    array_view(ffi, g, dtype)[:] = np.nan
    for a in model.context:
        bundle = x if a.role == "input" else w      # params and consts
        array_view(ffi, getattr(bundle, c_array(a.name)), dtype)[:] = np.asarray(values[a.name]).ravel()
    getattr(lib, f"{M}_forward")(w, x, v)
    getattr(lib, f"{M}_backward")(w, x, v, g)
    out = {a.name: array_view(ffi, getattr(v, c_array(a.name)), dtype).copy() for a in model.chain}
    out.update({a.name: array_view(ffi, getattr(g, c_array(a.name)), dtype).copy()
                for a in model.gradients})
    return out


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """Normwise relative error max|got - want| / max|want| (absolute when want is ~0)."""
    got = np.asarray(got, dtype=np.float64).ravel()
    want = np.asarray(want, dtype=np.float64).ravel()
    if got.size == 0:
        return 0.0
    if not np.all(np.isfinite(got)):
        return float("inf")
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got - want))) / max(scale, 1.0 if scale < 1e-8 else scale)

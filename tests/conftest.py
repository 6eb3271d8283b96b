"""Shared test options and helpers.

``--update-golden`` rewrites the golden generated sources under tests/golden/ instead of
comparing against them (review the diff before committing).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ instead of comparing")


# ONNX's test cases (tests/test_onnx.py), counted per operator as they run: passed, skipped
# (with the importer's reason) and failed, printed at the end of the run (before pytest's
# short summary and counts)
_ONNX_OUTCOMES: dict[str, dict] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if item.originalname not in ("test_onnx_node", "test_onnx_pytorch_converted"):
        return
    # one outcome per case: the call's, or the setup's if the case stopped there
    if not (report.when == "call" or (report.when == "setup" and not report.passed)):
        return
    case = item.callspec.params["case"]
    op = (case.model.graph.node[0].op_type if item.originalname == "test_onnx_node"
          else "(pytorch-converted)")
    counts = _ONNX_OUTCOMES.setdefault(op, {"passed": 0, "skipped": 0, "failed": 0,
                                            "why": set()})
    counts[report.outcome] += 1
    if report.skipped and isinstance(report.longrepr, tuple):
        # "Skipped: not expressible: node 'n' (Op): what" -> "what"
        why = report.longrepr[2].removeprefix("Skipped: ").removeprefix("not expressible: ")
        counts["why"].add(why.split("): ", 1)[1] if why.startswith("node ") else why)


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


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory):
    """A private build cache for the whole session (PROVED_KERNELS_CACHE)."""
    import os
    path = tmp_path_factory.mktemp("kernel-cache")
    old = os.environ.get("PROVED_KERNELS_CACHE")
    os.environ["PROVED_KERNELS_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("PROVED_KERNELS_CACHE", None)
    else:
        os.environ["PROVED_KERNELS_CACHE"] = old


def spec_main() -> Path:
    """The Agda executable build/agda/Main, (re)built by scripts/build-dump.sh if stale."""
    import subprocess
    root = TESTS.parent
    r = subprocess.run([str(root / "scripts" / "build-dump.sh"), "--binary"], cwd=root,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-4000:]
    return root / r.stdout.strip()


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
    M = model.name
    w, x = ffi.new(f"{M}_params *"), ffi.new(f"{M}_inputs *")
    v, g = ffi.new(f"{M}_values *"), ffi.new(f"{M}_grads *")
    array_view(ffi, v, dtype)[:] = np.nan
    array_view(ffi, g, dtype)[:] = np.nan
    for a in model.context:
        bundle = x if a.role == "input" else w      # params and consts
        array_view(ffi, getattr(bundle, a.name), dtype)[:] = np.asarray(values[a.name]).ravel()
    getattr(lib, f"{M}_forward")(w, x, v)
    getattr(lib, f"{M}_backward")(w, x, v, g)
    out = {a.name: array_view(ffi, getattr(v, a.name), dtype).copy() for a in model.chain}
    out.update({a.name: array_view(ffi, getattr(g, a.name), dtype).copy()
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

"""bench/run.py and bench/run_gpu.py end to end on a tiny workload (no timing assertions)."""

import json
from pathlib import Path

import pytest

import bench.model
from bench import run, run_gpu


def test_parse_args_defaults_to_one_epoch():
    a = run.parse_args([])
    assert (a.batch, a.reps, a.threads, a.models) == ([100, 1000], 5, [1, 2],
                                                      ["mlp", "cnn", "lenet5"])
    assert [run.n_batches(a, b) for b in a.batch] == [100, 10]
    assert a.impls == list(run.IMPLS)
    assert run.parse_args(["--dump", "x.json"]).models == ["cnn"]
    with pytest.raises(SystemExit):
        run.parse_args(["--impls", "fortran"])


def test_tuned_malloc_only_in_its_worker(monkeypatch):
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")
    assert "GLIBC_TUNABLES" not in run.worker_env("torch", 2)
    assert run.worker_env("torch-tuned", 2)["GLIBC_TUNABLES"] == run.TUNED_MALLOC
    assert run.worker_env("c", 2)["OMP_NUM_THREADS"] == "2"


def test_stats():
    s = run.stats([3.0, 1.0, 2.0, 10.0])
    assert (s["median"], s["min"], s["max"], s["n"]) == (2.5, 1.0, 10.0, 4)
    assert s["q1"] <= s["median"] <= s["q3"]


HAND_DUMP = str(Path(__file__).resolve().parent / "data" / "cnn_hand.json")


def test_peak_counts_the_fma_datapath(monkeypatch):
    """The peak's vector width is what one FMA pipe computes: Zen 4 runs a 512-bit FMA in two
    256-bit halves (8 floats), Zen 5 and Intel's AVX-512 cores in one (16)."""
    from bench import machine
    monkeypatch.setenv("BENCH_CLOCK_GHZ", "2.5")
    monkeypatch.delenv("BENCH_FMA_UNITS", raising=False)
    amd = {"vendor_id": "AuthenticAMD", "flags": "fma avx2 avx512f", "model name": "AMD EPYC"}
    for info, floats in (({**amd, "cpu family": "25"}, 8), ({**amd, "cpu family": "26"}, 16),
                         ({**amd, "vendor_id": "GenuineIntel", "cpu family": "6"}, 16),
                         ({**amd, "cpu family": "25", "flags": "fma avx2"}, 8),
                         ({"flags": "sse2"}, 4)):
        d = machine.describe(info)
        assert d["vector_floats"] == floats, info
        assert d["peak_gflops_per_core"] == 2 * floats * 2 * 2.5
        assert machine.peak_gflops(2, d) == 2 * d["peak_gflops_per_core"]


@pytest.mark.serial     # measures this machine's clock: while no other test runs
def test_peak_measured_per_thread_count(monkeypatch):
    """With measurements, a row's peak is the one measured at its thread count (the nominal
    formula where that count was not measured); the FMA loop itself runs here when it can,
    and implies a clock between 0.8 and 6 GHz (counting each FMA twice would give 7.3 on the
    Zen 4 that measured 3.66)."""
    from bench import machine
    monkeypatch.setenv("BENCH_CLOCK_GHZ", "2.5")
    rates = {1: 117.0, 2: 110.0, 4: 58.0}
    monkeypatch.setattr(machine, "measure", lambda t, flags=None: rates.get(t))
    monkeypatch.setattr(machine.os, "sched_getaffinity", lambda pid: {0, 1})   # 2 CPUs
    info = {"vendor_id": "AuthenticAMD", "flags": "fma avx2 avx512f", "cpu family": "25"}
    d = machine.describe(info, measure_threads=(2, 1, 4, 3))
    assert d["measured_gflops_per_core"] == {"1": 117.0, "2": 110.0, "4": 58.0}
    # per core: at the most threads the 2 CPUs run at once, not at 4 sharing them
    assert d["peak_gflops_per_core"] == 110.0 and d["peak_source"] == "measured"
    assert d["nominal_gflops_per_core"] == 2 * 8 * 2 * 2.5
    assert d["measured_clock_ghz"] == 110.0 / (2 * 8 * 2)
    assert [machine.peak_gflops(t, d) for t in (1, 2, 3, 4)] == [117.0, 220.0, 330.0, 232.0]
    assert "117.0 at 1 thread, 110.0 at 2 threads" in run.peak_line(d)
    nominal = machine.describe(info)
    assert nominal["peak_source"] == "nominal" and nominal["peak_gflops_per_core"] == 80.0
    assert "not measured" in run.peak_line(nominal)
    monkeypatch.undo()
    rate = machine.measure(1, steps=2_000_000, runs=2)
    if rate is None:
        pytest.skip("no x86-64 FMA or no C compiler here")
    here = machine.describe(measure_threads=(1,))
    assert 0.8 <= here["measured_clock_ghz"] <= 6.0, here


def test_c_only_run_writes_results(tmp_path, capsys, kernel_cache):
    rc = run.main(["--reps", "2", "--batches", "3", "--impls", "handwritten-c,generated-c",
                   "--dump", HAND_DUMP, "--out-dir", str(tmp_path), "--batch", "100"])
    assert rc == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    assert "latest.md" in files and len(files) == 2
    res = json.loads(next(tmp_path.glob("*.json")).read_text())
    meta = res["meta"]
    assert meta["images"] == 300 and meta["threads"] == [1, 2]
    assert meta["system"]["cpu_model"]
    assert meta["unavailable"] == {}
    # both C versions are built with the extractor's optimisation flags
    build = meta["build"]
    assert set(build["generated-c"]["CFLAGS"]) <= set(build["handwritten-c"]["cflags"])
    assert meta["build"]["generated-c"]["dump"] == HAND_DUMP
    agreement = res["agreement"]["cnn, batch 100"]
    assert agreement["ok"]
    assert meta["peak"]["vector_floats"] in (4, 8, 16)
    assert {r["impl"] for r in agreement["rows"]} == {
        "handwritten-c@2", "generated-c@1", "generated-c@2"}
    # every configuration timed once per repetition
    assert len(res["samples"]) == 2 * 2 * 2 * 2
    assert all(s["seconds"] > 0 for s in res["samples"])
    # an inference timing repeats its pass (300 images: about a millisecond) for 0.1 s at least
    # (one pass alone where it took that long: a machine busy with other work, 2026-11-27)
    for s in res["samples"]:
        if s["workload"] == "infer":
            assert s["seconds"] * s["passes"] >= 0.1, s
            assert s["passes"] > 1 or s["seconds"] >= 0.1, s
        else:
            assert s["passes"] == 1, s
    train = [r for r in res["results"] if r["workload"] == "train"]
    assert all(r["flops"] > 0 and r["gflops"] > 0 for r in train)
    assert all(r["model"] == "cnn" and r["batch"] == 100 for r in res["results"])
    gen = [r for r in res["results"] if r["impl"] == "generated-c"]
    assert all(r["vs_handwritten-c"] > 0 for r in gen)
    out = capsys.readouterr().out
    assert "| cnn | train | 100 | 2 | handwritten-c |" in out
    assert "| cnn | infer | 100 | 1 | generated-c |" in out
    assert "repeats the pass until 0.1 s have gone by" in out


def test_unavailable_generated_code_is_reported_not_fatal(tmp_path, capsys):
    rc = run.main(["--reps", "1", "--batches", "3", "--threads", "1", "--workloads", "infer",
                   "--impls", "handwritten-c,generated-c", "--dump", str(tmp_path / "none.json"),
                   "--no-write", "--batch", "100"])
    assert rc == 0
    assert "generated-c not measured" in capsys.readouterr().err


@pytest.mark.torch
@pytest.mark.slow
def test_full_run_with_pytorch(tmp_path, kernel_cache):
    pytest.importorskip("torch")
    rc = run.main(["--reps", "1", "--batches", "3", "--threads", "1", "--dump", HAND_DUMP,
                   "--out-dir", str(tmp_path), "--batch", "100"])
    assert rc == 0
    res = json.loads(next(tmp_path.glob("*.json")).read_text())
    impls = {r["impl"] for r in res["results"]}
    assert impls == set(run.IMPLS)
    workers = res["meta"]["workers"]
    assert workers["torch-tuned"]["GLIBC_TUNABLES"] == run.TUNED_MALLOC
    assert workers["torch"]["GLIBC_TUNABLES"] is None
    assert workers["torch"]["torch"].startswith("2.")
    # all trained the same network: the last batch's loss agrees
    last = {r["impl"]: r["last_loss"] for r in res["results"] if r["workload"] == "train"}
    assert max(last.values()) - min(last.values()) < 1e-4
    assert all(r["vs_handwritten-c"] > 0 for r in res["results"] if r["impl"] != "handwritten-c")


@pytest.mark.torch
def test_perturbed_implementation_is_not_reported(tmp_path, capsys):
    pytest.importorskip("torch")
    rc = run.main(["--reps", "1", "--batches", "3", "--threads", "1", "--models", "cnn",
                   "--impls", "handwritten-c,pytorch", "--perturb", "pytorch=1e-3",
                   "--out-dir", str(tmp_path), "--batch", "100"])
    assert rc == 2
    assert list(tmp_path.iterdir()) == []
    assert "REFUSING TO REPORT" in capsys.readouterr().err


@pytest.mark.torch
def test_zoo_run_covers_every_model(tmp_path, kernel_cache):
    """Every zoo model against PyTorch, from its model file: the agreement check passes and
    every row has its FLOPs (from the dump), GFLOP/s and share of the peak."""
    pytest.importorskip("torch")
    rc = run.main(["--reps", "1", "--batches", "1", "--threads", "1", "--batch", "100",
                   "--impls", "generated-c,pytorch-tuned-malloc", "--out-dir", str(tmp_path)])
    assert rc == 0
    res = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert {r["model"] for r in res["results"]} == {"mlp", "cnn", "lenet5"}
    assert all(a["ok"] for a in res["agreement"].values())
    assert all(r["gflops"] > 0 and r["pct_peak"] > 0 for r in res["results"])
    assert {(s["model"], s["workload"]) for s in res["speedups"]} == {
        (m, w) for m in ("mlp", "cnn", "lenet5") for w in ("train", "infer")}
    assert "| model | workload | batch | threads | speed-up |" in (tmp_path / "latest.md").read_text()


def test_gpu_run_skips_cleanly_without_a_gpu(capsys):
    ok, _ = run_gpu.cuda_available()
    if ok:
        pytest.skip("a GPU is present")
    assert run_gpu.main(["--reps", "1", "--batches", "1"]) == 0
    assert "skipped" in capsys.readouterr().err


@pytest.mark.torch
def test_gpu_harness_on_cpu(tmp_path, capsys):
    pytest.importorskip("torch")
    assert run_gpu.main(["--device", "cpu", "--reps", "2", "--batches", "3",
                         "--out-dir", str(tmp_path)]) == 0
    res = json.loads(next(tmp_path.glob("*-gpu.json")).read_text())
    assert res["agreement"]["ok"]
    assert {(r["workload"], r["impl"]) for r in res["results"]} == {
        ("train", "pytorch-cpu"), ("infer", "pytorch-cpu")}
    assert len(res["samples"]) == 4
    assert "| train | pytorch-cpu |" in (tmp_path / "latest-gpu.md").read_text()
    assert run_gpu.main(["--device", "cpu", "--reps", "1", "--batches", "3", "--no-write",
                         "--perturb", "pytorch-cpu=1e-3"]) == 2


@pytest.mark.slow
def test_generated_cuda_library_builds_and_opens_without_a_gpu(tmp_path):
    import shutil
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    ffi, lib, path = run_gpu.build_cuda_library(HAND_DUMP, out_dir=tmp_path)
    assert path.is_file() and path.parent.parent == tmp_path
    # host code runs without a device: a workspace grows with the samples in flight
    assert 0 < lib.model_cnn_cuda_workspace_size(1) < lib.model_cnn_cuda_workspace_size(100)
    assert ffi.sizeof("model_cnn_params") == 4 * bench.model.N_PARAMS

"""Data-parallel training (runtime.distributed) on one machine: gloo over localhost.

The sharding is checked as arithmetic; the rest runs ``python -m runtime train --distributed``
in real processes: 2 and 3 ranks (one run through ``torchrun``, the others started here with
its environment variables) must leave the same bits as one process; a run stopped after an
epoch resumes at another number of processes to the same bits; a killed rank makes rank 0 stop
within the time limit naming it; a rank with other weights is refused at the start.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from runtime.distributed import group_bounds, rank_groups, shard

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "models" / "mlp.model")


def test_shards_are_disjoint_and_cover_the_batch():
    for n in (1, 5, 59, 60, 100, 101):
        for groups in (1, 3, 6, 7):
            b = group_bounds(n, groups)
            assert b[0][0] == 0 and b[-1][1] == n
            assert all(lo <= hi for lo, hi in b) and all(b[j][1] == b[j + 1][0]
                                                       for j in range(groups - 1))
            assert max(hi - lo for lo, hi in b) - min(hi - lo for lo, hi in b) <= 1
            for world in range(1, groups + 1):
                owned = [g for r in range(world) for g in rank_groups(groups, r, world)]
                assert owned == list(range(groups)), (groups, world)
                seen = sorted(i for r in range(world) for lo, hi in shard(n, groups, r, world)
                              for i in range(lo, hi))
                assert seen == list(range(n)), (n, groups, world)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("dist")
    rng = np.random.default_rng(0)
    x = rng.random((180, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 180)
    np.savez(d / "data.npz", x_train=x, y_train=y)
    return d / "data.npz"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _args(data, out, epochs=2, extra=()):
    return ["-m", "runtime", "train", MODEL, "--data", str(data), "--epochs", str(epochs),
            "--batch-size", "50", "--lr", "0.5", "--momentum", "0.5", "--threads", "1",
            "--test-limit", "0", "--no-progress", "--out", str(out), "--distributed",
            "--groups", "6", *extra]


def _spawn(data, out, world, epochs=2, extra=(), per_rank=None, timeout=None):
    """Start ``world`` ranks with torchrun's environment variables; returns the processes."""
    port = _port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        more = list(extra) + (per_rank(rank) if per_rank else [])
        if timeout is not None:
            more += ["--dist-timeout", str(timeout)]
        procs.append(subprocess.Popen([sys.executable, *_args(data, out, epochs, more)],
                                      env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return procs


def _wait(procs, limit=300):
    outs = [p.communicate(timeout=limit) for p in procs]
    return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def _one(data, out, epochs=2, extra=()):
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK")}
    r = subprocess.run([sys.executable, *_args(data, out, epochs, extra)], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return np.load(out / "weights.npz")


def _same(a, b):
    names = [k for k in a.files if not k.startswith("__")]
    assert names
    for k in names:
        assert np.array_equal(a[k], b[k]), f"{k} differs (max {np.abs(a[k] - b[k]).max()})"


@pytest.mark.torch
def test_two_and_three_processes_equal_one_bitwise(data, tmp_path):
    pytest.importorskip("torch.distributed")
    one = _one(data, tmp_path / "k1")
    start = _one(data, tmp_path / "k0", epochs=0)
    assert np.abs(one["w1"] - start["w1"]).max() > 1e-4  # it trained
    # 2 ranks through torchrun itself, 3 started here
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                        "--master_port", str(_port()), *_args(data, tmp_path / "k2")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    _same(one, np.load(tmp_path / "k2" / "weights.npz"))
    results = _wait(_spawn(data, tmp_path / "k3", 3))
    for code, out, err in results:
        assert code == 0, err
    _same(one, np.load(tmp_path / "k3" / "weights.npz"))
    assert "epoch 2/2" in results[0][1] and not results[1][1] and not results[2][1]  # rank 0 reports


@pytest.mark.torch
def test_resume_at_another_number_of_processes(data, tmp_path):
    pytest.importorskip("torch.distributed")
    straight = _one(data, tmp_path / "k1", epochs=2)
    for code, _, err in _wait(_spawn(data, tmp_path / "r", 2, epochs=1)):
        assert code == 0, err
    saved = tmp_path / "r" / "weights.npz"
    for code, _, err in _wait(_spawn(data, tmp_path / "r", 3, epochs=1,
                                     extra=["--weights", str(saved)])):
        assert code == 0, err
    _same(straight, np.load(saved))


def _stop_rank_one(data, out, sig, timeout):
    """Two ranks training for long; after rank 0 saved an epoch, rank 1 gets ``sig``; rank 0's
    exit status and stderr (it must stop by itself, within two minutes)."""
    procs = _spawn(data, out, 2, epochs=100000, timeout=timeout)
    try:
        deadline = time.monotonic() + 240
        while not (out / "weights.npz").exists():  # an epoch done
            assert time.monotonic() < deadline and procs[0].poll() is None, \
                procs[0].communicate()[1]
            time.sleep(0.2)
        procs[1].send_signal(sig)
        _, err = procs[0].communicate(timeout=120)  # bounded: no hang
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
    return procs[0].returncode, err


@pytest.mark.torch
def test_a_killed_rank_is_named_and_the_others_stop(data, tmp_path):
    pytest.importorskip("torch.distributed")
    code, err = _stop_rank_one(data, tmp_path / "kill", signal.SIGKILL, timeout=60)
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert "rank 1" in last and "did not reach it" in last, err


@pytest.mark.torch
def test_ranks_with_different_weights_are_refused(data, tmp_path):
    pytest.importorskip("torch.distributed")
    results = _wait(_spawn(data, tmp_path / "odd", 2, epochs=1,
                           per_rank=lambda r: ["--init", "sac"] if r else []))
    assert all(code == 2 for code, _, _ in results), results
    assert "rank 1 differs from rank 0 in weights:" in results[0][2]
    # other data (fewer images) and another seed on rank 1
    results = _wait(_spawn(data, tmp_path / "odd2", 2, epochs=1,
                           per_rank=lambda r: ["--train-limit", "120", "--seed", "5"] if r else []))
    assert all(code == 2 for code, _, _ in results), results
    assert "rank 1 differs from rank 0 in data, training arguments" in results[0][2]


@pytest.mark.torch
def test_a_hung_rank_is_named_at_the_time_limit(data, tmp_path):
    pytest.importorskip("torch.distributed")
    # SIGSTOP: alive, but never at the next exchange
    code, err = _stop_rank_one(data, tmp_path / "hang", signal.SIGSTOP, timeout=5)
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert "rank 1 did not reach it" in last and "5 s limit" in last, err

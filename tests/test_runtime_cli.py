"""The command line, ``python -m runtime train|predict``, on a small subset."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import runtime
from runtime.__main__ import main
from runtime._kernels import Kernels
from test_runtime_cdouble import use_backend

ROOT = Path(__file__).resolve().parent.parent


def test_train_then_predict(tmp_path, monkeypatch, capsys):
    use_backend("double", monkeypatch)
    out = tmp_path / "run"
    rc = main(["train", "cnn", "--epochs", "2", "--batch-size", "20", "--lr", "0.5",
               "--threads", "1", "--train-limit", "200", "--test-limit", "100",
               "--out", str(out), "--no-progress", "--init", "random"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "epoch 1/2" in text and "epoch 2/2" in text and "images/s" in text
    assert sorted(p.name for p in out.iterdir()) == ["curves.png", "history.json", "weights.npz"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    history = json.loads((out / "history.json").read_text())
    assert history["epoch"] == [1, 2] and len(history["test_accuracy"]) == 2

    # the saved weights are those of the same training run done through the API
    m = runtime.load("cnn", init="random")
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 200)
    m.train(x, y, epochs=2, batch_size=20, lr=0.5, threads=1, progress=False)
    saved = runtime.load("cnn", weights=out / "weights.npz")
    for n in m.params:
        assert saved.params[n].tobytes() == m.params[n].tobytes()
    assert history["loss"] == m.history["loss"]

    rc = main(["predict", "cnn", "--weights", str(out / "weights.npz"), "--limit", "100"])
    text = capsys.readouterr().out
    xt, yt = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 100)
    assert rc == 0 and f"accuracy {m.evaluate(xt, yt):.4f}" in text


def test_ctrl_c_saves_what_was_learned(tmp_path, monkeypatch, capsys):
    use_backend("double", monkeypatch)
    fn = Kernels.fn
    updates = []

    def interrupting_fn(self, name):
        f = fn(self, name)
        if name != "sgd_update":
            return f

        def sgd(*args):
            if len(updates) == 7:  # Ctrl-C arrives before the 8th update
                raise KeyboardInterrupt
            updates.append(1)
            return f(*args)

        return sgd

    monkeypatch.setattr(Kernels, "fn", interrupting_fn)
    out = tmp_path / "run"
    rc = main(["train", "cnn", "--epochs", "3", "--batch-size", "20", "--threads", "1",
               "--train-limit", "100", "--test-limit", "50", "--out", str(out),
               "--no-progress"])
    assert rc == 130 and "interrupted" in capsys.readouterr().err
    monkeypatch.setattr(Kernels, "fn", fn)
    # 7 updates = one epoch of 5 batches + 2 batches of the second
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 100)
    ref = runtime.load("cnn")
    ref.train(x, y, epochs=1, batch_size=20, threads=1, progress=False)
    ref.train(x[:40], y[:40], epochs=1, batch_size=20, threads=1, progress=False)
    saved = runtime.load("cnn", weights=out / "weights.npz")
    for n in ref.params:
        assert saved.params[n].tobytes() == ref.params[n].tobytes()
    assert json.loads((out / "history.json").read_text())["epoch"] == [1]


def test_cli_errors(tmp_path, capsys):
    assert main(["predict", "cnn", "--weights", str(tmp_path / "missing.npz")]) == 2
    assert main(["train", "cnn", "--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no MNIST train images" in capsys.readouterr().err


def test_cli_subprocess_with_generated_kernels(tmp_path, monkeypatch):
    dump = use_backend("generated", monkeypatch)  # skips while extract is missing
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "run"
    r = subprocess.run(
        [sys.executable, "-m", "runtime", "train", "cnn", "--epochs", "1", "--train-limit",
         "300", "--test-limit", "100", "--out", str(out), "--threads", "2", "--dump", str(dump)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "epoch 1/1" in r.stdout + r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "runtime", "predict", "cnn", "--weights",
         str(out / "weights.npz"), "--limit", "100", "--dump", str(dump)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stderr
    acc = float(r.stdout.split()[1])
    m = runtime.load("cnn", weights=out / "weights.npz")
    assert acc == pytest.approx(m.evaluate(*runtime.load_mnist(runtime.DEFAULT_DATA, "test", 100)),
                                abs=1e-4)

"""The command line, ``python -m runtime train|predict``, on a small subset."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import runtime
from runtime.__main__ import main
from runtime._kernels import Kernels
from test_runtime_cdouble import (
    cnn_dump_variant,
    generated_dump,
    generated_dump_of,
    use_backend,
    use_double_for_any_dump,
)

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


# -- MODEL as a dump (.json) or a model file (.model) ------------------------------------------


@pytest.fixture
def frontend(monkeypatch):
    """``extract.front.frontend`` with ``compile_model`` stubbed: set ``frontend.result`` to the
    dump text to return, or to an exception to raise; ``frontend.calls`` records the paths."""
    import types

    import extract

    try:
        import extract.front.frontend as module
    except ImportError:  # not written yet: a stand-in with the documented interface
        module = types.ModuleType("extract.front.frontend")

        class ModelError(Exception):
            pass

        module.ModelError = ModelError
        monkeypatch.setitem(sys.modules, "extract.front.frontend", module)
        monkeypatch.setattr(extract, "frontend", module, raising=False)
    state = types.SimpleNamespace(result=generated_dump().read_text(), calls=[],
                                  ModelError=module.ModelError)

    def compile_model(path, **kw):
        state.calls.append(Path(path))
        if isinstance(state.result, BaseException):
            raise state.result
        return state.result

    monkeypatch.setattr(module, "compile_model", compile_model, raising=False)
    return state


def test_train_and_predict_a_dump_file_default_out(tmp_path, monkeypatch, capsys):
    """MODEL given as a dump file (of the CNN, renamed ``lenet``): the default output
    directory is out/<the dump's model name>, and the weights are the API's."""
    use_double_for_any_dump(monkeypatch, names=("cnn", "lenet"))
    dump = cnn_dump_variant(tmp_path, new_keys=True, model="lenet")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rc = main(["train", str(dump), "--epochs", "1", "--train-limit", "60", "--test-limit", "20",
               "--batch-size", "20", "--threads", "1", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert "training lenet" in capsys.readouterr().out
    assert os.listdir(work / "out") == ["lenet"]
    out = work / "out" / "lenet"
    assert sorted(p.name for p in out.iterdir()) == ["curves.png", "history.json", "weights.npz"]
    rc = main(["predict", str(dump), "--weights", str(out / "weights.npz"), "--limit", "50"])
    assert rc == 0 and "accuracy" in capsys.readouterr().out
    # the weights are those of the same run through the API, on the built-in CNN
    m = runtime.load("cnn")
    m.train(*runtime.load_mnist(runtime.DEFAULT_DATA, "train", 60), epochs=1, batch_size=20,
            threads=1, progress=False)
    saved = runtime.load(dump, weights=out / "weights.npz")
    assert saved.name == "lenet"
    for n in m.params:
        assert saved.params[n].tobytes() == m.params[n].tobytes()
    # weights of one model are refused by another
    rc = main(["predict", "cnn", "--weights", str(out / "weights.npz"), "--limit", "5"])
    assert rc == 2 and "weights are for model 'lenet', not 'cnn'" in capsys.readouterr().err


def test_dump_without_data_is_a_clear_cli_error(tmp_path, monkeypatch, capsys):
    rc = main(["train", str(generated_dump_of("dot")), "--out", str(tmp_path / "o"),
               "--train-limit", "10", "--no-progress"])
    err = capsys.readouterr().err
    # one line of error; a build slower than PROGRESS_AFTER (a busy machine) reports its time
    lines = [ln for ln in err.splitlines() if not ln.startswith("build ")]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "declares no features/target" in lines[0]
    assert not (tmp_path / "o").exists()


def test_model_file_on_the_generated_kernels(tmp_path, monkeypatch, frontend):
    """A .model file: its dump (from compile_model) is kept, content-addressed, in the kernel
    cache and the kernels are generated from it; CLI and API agree."""
    import hashlib

    cache = tmp_path / "cache"
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(cache))
    model = tmp_path / "lenet.model"
    model.write_text("model cnn\n")  # the stub does not read it
    m = runtime.load(model, init="random", seed=2)
    assert frontend.calls == [model]
    digest = hashlib.sha256(frontend.result.encode()).hexdigest()
    kept = cache / "dumps" / f"{digest}.json"
    assert m.dump == kept and kept.read_text() == frontend.result
    assert m.name == "cnn" and m.input_shape == (28, 28) and m.n_classes == 10
    assert any(p.name.startswith("_pk_cnn_f32_") for p in cache.iterdir())  # built there
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 30)
    ref = runtime.load("cnn", init="random", seed=2)
    np.testing.assert_allclose(m.predict(x), ref.predict(x), rtol=1e-6)

    monkeypatch.chdir(tmp_path)
    env_out = tmp_path / "out" / "cnn"
    assert main(["train", str(model), "--epochs", "1", "--train-limit", "40", "--test-limit",
                 "20", "--threads", "1", "--no-progress", "--init", "random"]) == 0
    assert (env_out / "weights.npz").exists()
    assert main(["predict", str(model), "--weights", str(env_out / "weights.npz"),
                 "--limit", "20"]) == 0


def test_model_file_errors(tmp_path, monkeypatch, capsys, frontend):
    model = tmp_path / "bad.model"
    model.write_text("model bad\n")
    frontend.result = frontend.ModelError(f"{model}:3: binding r: shapes 10 and 12 differ")
    with pytest.raises(frontend.ModelError, match="bad.model:3: binding r"):
        runtime.load(model)
    rc = main(["train", str(model), "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err == f"error: {model}:3: binding r: shapes 10 and 12 differ\n"
    frontend.result = RuntimeError("the Agda executable build/agda/Main is missing; build it "
                                   "with `make dump`")
    rc = main(["predict", str(model), "--weights", str(tmp_path / "w.npz")])
    err = capsys.readouterr().err
    assert rc == 2 and "make dump" in err and err.count("\n") == 1
    rc = main(["predict", str(tmp_path / "absent.model"), "--weights", str(tmp_path / "w.npz")])
    assert rc == 2 and "no model file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_extractor_errors_are_one_line(tmp_path, monkeypatch, capsys):
    from extract.passes.lower import ExtractError

    def refuse(cls, model, precision, dump=None):
        raise ExtractError("binding 'd_h': the subterm would need a temporary array")

    monkeypatch.setattr(Kernels, "open", classmethod(refuse))
    rc = main(["train", "cnn", "--out", str(tmp_path / "o"), "--no-progress"])
    assert rc == 2
    assert capsys.readouterr().err == ("error: binding 'd_h': the subterm would need a "
                                       "temporary array\n")


@pytest.mark.agda
def test_real_model_file_end_to_end(tmp_path, monkeypatch):
    """models/cnn.model through the Agda elaborator (no stub): the same network as the
    built-in cnn, so the same predictions from the same initial weights."""
    from runtime.spec import ModelCompileError

    source = ROOT / "models" / "cnn.model"
    if not source.exists():
        pytest.skip("no models/cnn.model")
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(tmp_path / "cache"))
    try:
        m = runtime.load(source, init="random", seed=5)
    except ModelCompileError as e:  # no Agda executable, or one without `model`
        pytest.skip(f"cannot compile model files here: {e}")
    assert m.name == "cnn" and m.spec.has_data
    assert (m.features, m.target, m.n_classes) == ("inp", "target", 10)
    assert m.fan_in == {"k1": 25, "b1": 25, "k2": 150, "b2": 150, "fc": 192, "b": 192}
    assert m.dump.parent == tmp_path / "cache" / "dumps"
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 50)
    ref = runtime.load("cnn", init="random", seed=5)
    np.testing.assert_allclose(m.predict(x), ref.predict(x), rtol=1e-6, atol=1e-7)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "runtime", "train", str(source), "--epochs", "1",
                        "--train-limit", "100", "--test-limit", "50", "--no-progress"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "cnn" / "weights.npz").is_file()


def test_predict_writes_the_predictions(tmp_path, monkeypatch, capsys):
    """``predict --out`` writes the outputs and classes of each image (.npz, .csv), also for
    data without labels; what it cannot do is an error before anything is written."""
    use_backend("double", monkeypatch)
    m = runtime.load("cnn", seed=3)
    m.save(tmp_path / "w.npz")
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 30)
    expect = m.predict(x)
    w = ["--weights", str(tmp_path / "w.npz")]

    rc = main(["predict", "cnn", *w, "--limit", "30", "--out", str(tmp_path / "a" / "p.npz")])
    text = capsys.readouterr().out
    acc = float((expect.argmax(1) == y).mean())
    assert rc == 0 and f"accuracy {acc:.4f}" in text and "predictions:" in text
    with np.load(tmp_path / "a" / "p.npz") as z:
        assert sorted(z.files) == ["labels", "outputs"]
        np.testing.assert_array_equal(z["outputs"], expect)
        np.testing.assert_array_equal(z["labels"], expect.argmax(1))

    data = tmp_path / "unlabelled.npz"
    np.savez(data, x_test=x[:7])
    assert main(["predict", "cnn", *w, "--data", str(data), "--out", str(tmp_path / "p.csv")]) == 0
    assert "accuracy" not in capsys.readouterr().out
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "label," + ",".join(f"out{j}" for j in range(10)) and len(lines) == 8
    rows = np.array([[float(c) for c in r.split(",")] for r in lines[1:]])
    np.testing.assert_array_equal(rows[:, 0], expect[:7].argmax(1))
    np.testing.assert_allclose(rows[:, 1:], expect[:7], rtol=1e-8)

    for args, message in [
        (["--data", str(data)], "no array y_test, so no accuracy.*--out"),
        (["--out", str(tmp_path / "p.txt")], "written as .npz or .csv, not .txt"),
        (["--out", str(tmp_path)], "is a directory"),
    ]:
        assert main(["predict", "cnn", *w, *args]) == 2
        assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "p.txt").exists()


def test_train_with_momentum(tmp_path, monkeypatch, capsys):
    """``--momentum`` reaches the trainer (the weights are those of ``train(momentum=...)``),
    and a momentum outside [0, 1) is an error before anything is written."""
    use_backend("double", monkeypatch)
    common = ["--epochs", "1", "--batch-size", "20", "--lr", "0.1", "--threads", "1",
              "--train-limit", "100", "--test-limit", "0", "--no-progress"]
    assert main(["train", "cnn", *common, "--momentum", "1", "--out", str(tmp_path / "no")]) == 2
    assert "momentum must be in [0, 1)" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    assert main(["train", "cnn", *common, "--momentum", "0.8", "--out", str(tmp_path)]) == 0
    assert "momentum 0.8" in capsys.readouterr().out
    m = runtime.load("cnn")
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 100)
    m.train(x, y, epochs=1, batch_size=20, lr=0.1, threads=1, progress=False, momentum=0.8)
    saved = runtime.load("cnn", weights=tmp_path / "weights.npz")
    for n in m.params:
        assert saved.params[n].tobytes() == m.params[n].tobytes()

    # resumed with --weights and --momentum: the file's velocity goes on, so two runs of one
    # epoch give the weights of two epochs in one call
    resumed = tmp_path / "resumed"
    assert main(["train", "cnn", *common, "--momentum", "0.8", "--out", str(resumed),
                 "--weights", str(tmp_path / "weights.npz")]) == 0
    assert "momentum 0.8, continuing the file's velocity" in capsys.readouterr().out
    m.train(x, y, epochs=1, batch_size=20, lr=0.1, threads=1, progress=False, momentum=0.8)
    again = runtime.load("cnn", weights=resumed / "weights.npz")
    for n in m.params:
        assert again.params[n].tobytes() == m.params[n].tobytes()
        assert again.velocity[n].tobytes() == m.velocity[n].tobytes()
    # without --momentum the run says it drops the velocity, and the file it writes has none
    assert main(["train", "cnn", *common, "--out", str(tmp_path / "plain"),
                 "--weights", str(resumed / "weights.npz")]) == 0
    assert ("holds the velocity of training with momentum 0.8; this run is plain SGD and "
            "drops it (--momentum 0.8 continues it)") in capsys.readouterr().out
    assert runtime.load("cnn", weights=tmp_path / "plain" / "weights.npz").velocity is None


def test_epochs_zero_says_what_it_saved_and_a_log_gets_no_bar(tmp_path, monkeypatch, capsys):
    """``--epochs 0`` trains nothing: it measures the starting weights on the test set and says
    that the file it writes holds them. Without ``--no-progress`` but with stderr not a
    terminal (here captured), there is no progress bar, only the epochs' lines."""
    use_backend("double", monkeypatch)
    common = ["--train-limit", "40", "--test-limit", "20", "--batch-size", "20",
              "--threads", "1"]
    out = tmp_path / "run"
    assert main(["train", "cnn", *common, "--epochs", "0", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    acc = float(re.search(r"test accuracy of the starting weights \(init random\): ([0-9.]+)",
                          text).group(1))
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 20)
    assert acc == pytest.approx(runtime.load("cnn").evaluate(x, y), abs=1e-4)
    assert (f"no training (--epochs 0): {out / 'weights.npz'} holds the starting weights "
            f"(init random)") in text
    assert main(["train", "cnn", *common, "--epochs", "1", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err and "epoch 1/1  loss" in captured.out
    with pytest.raises(ValueError, match=rf"{out} is a directory: weights are saved to a file"):
        runtime.load("cnn").save(out)
    assert main(["train", "cnn", *common, "--out", "/proc/no/such"]) == 2
    assert ("--out /proc/no/such: cannot create the directory (No such file or directory)"
            in capsys.readouterr().err)


def test_a_run_resumed_where_it_was_saved_continues_its_history(tmp_path, monkeypatch, capsys):
    """``--weights OUT/weights.npz --out OUT``: the history and curves go on from the earlier
    run's epochs; resumed into another directory, the history starts afresh."""
    use_backend("double", monkeypatch)
    common = ["--train-limit", "40", "--test-limit", "20", "--batch-size", "20", "--threads",
              "1", "--no-progress"]
    out = tmp_path / "run"
    assert main(["train", "cnn", *common, "--epochs", "2", "--out", str(out)]) == 0
    first = json.loads((out / "history.json").read_text())
    capsys.readouterr()
    assert main(["train", "cnn", *common, "--epochs", "1", "--out", str(out), "--weights",
                 str(out / "weights.npz")]) == 0
    text = capsys.readouterr().out
    assert "continuing the history in" in text and "(epochs 1-2); this run's epoch is 3\n" in text
    assert re.search(r"^epoch 3/3  loss", text, re.M), text
    joined = json.loads((out / "history.json").read_text())
    assert joined["epoch"] == [1, 2, 3]
    for key, values in first.items():
        assert joined[key][:2] == values, key
    assert len(joined["loss"]) == 3 and joined["loss"][2] is not None
    other = tmp_path / "other"
    assert main(["train", "cnn", *common, "--epochs", "1", "--out", str(other), "--weights",
                 str(out / "weights.npz")]) == 0
    assert json.loads((other / "history.json").read_text())["epoch"] == [1]
    capsys.readouterr()
    assert main(["train", "cnn", "--epochs", "0", "--train-limit", "99999", "--test-limit",
                 "99999", "--out", str(other)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"has \d+ training images, fewer than --train-limit 99999: all of them",
                     text) and "fewer than --test-limit 99999" in text, text


def test_out_errors_notes_and_an_early_ctrl_c(tmp_path, monkeypatch, capsys):
    """``--out`` naming a file is a one-line error; an existing run's weights are replaced with
    a note; Ctrl-C before training (kernels being built) exits 130 without a traceback."""
    use_backend("double", monkeypatch)
    common = ["--epochs", "0", "--train-limit", "10", "--test-limit", "0", "--no-progress"]
    (tmp_path / "afile").write_text("")
    for out, message in [("afile", "--out .*afile is a file"), ("afile/sub", "Not a directory")]:
        assert main(["train", "cnn", *common, "--out", str(tmp_path / out)]) == 2
        assert re.search(message, capsys.readouterr().err)
    assert main(["train", "cnn", *common, "--out", str(tmp_path / "run")]) == 0
    assert "note:" not in capsys.readouterr().out
    (tmp_path / "run" / "history.json").write_text("{}")  # an earlier run's, stale after this
    assert main(["train", "cnn", *common, "--out", str(tmp_path / "run")]) == 0
    assert "exists (an earlier run): this run replaces it" in capsys.readouterr().out
    assert not (tmp_path / "run" / "history.json").exists()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("runtime.__main__.load", interrupted)
    assert main(["train", "cnn", *common, "--out", str(tmp_path / "late")]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "interrupted" and "Traceback" not in err


def test_options_that_do_nothing_say_so(tmp_path, monkeypatch, capsys):
    """--init with --weights of parameters is not used, and threads past the cores only take
    turns: a note says so (and nothing when --init is left out, or the file holds consts
    alone)."""
    use_backend("double", monkeypatch)
    common = ["--train-limit", "40", "--test-limit", "20", "--batch-size", "20", "--epochs", "1",
              "--no-progress"]
    out = tmp_path / "run"
    assert main(["train", "cnn", *common, "--threads", "1", "--out", str(out)]) == 0
    assert "note: --" not in capsys.readouterr().out
    assert main(["train", "cnn", *common, "--threads", "1", "--out", str(tmp_path / "b"),
                 "--weights", str(out / "weights.npz"), "--init", "sac"]) == 0
    text = capsys.readouterr().out
    assert f"note: --init sac is not used: the parameters come from {out / 'weights.npz'}\n" \
        in text
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert main(["train", "cnn", *common, "--threads", "3", "--out", str(tmp_path / "c"),
                 "--weights", str(out / "weights.npz")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("note: --threads 3 on a machine of 2 cores: the threads past 2 take "
                           "turns on them"), text
    assert "--init" not in text

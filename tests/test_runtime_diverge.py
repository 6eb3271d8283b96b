"""Training that meets a NaN or infinite loss or weight stops with ``DivergedError`` and keeps
the last complete epoch's weights; no weights file holds NaN; the CLI takes data of any shape
from an ``.npz``."""

import json
import re

import numpy as np
import pytest

import runtime
from runtime.__main__ import main
from runtime._kernels import Kernels
from test_runtime_cdouble import use_backend


def data(n=60):
    return runtime.load_mnist(runtime.DEFAULT_DATA, "train", n)


def exploding(m):
    """Weights of alternating sign whose products with large pixels overflow to +inf and
    -inf: their sum is NaN, so the first batch's loss is NaN."""
    k1 = np.full(m.params["k1"].shape, 1e200)
    k1.reshape(-1)[1::2] = -1e200
    return {**m.get_params(), "k1": k1}


def test_nan_loss_stops_training_before_its_update(monkeypatch):
    use_backend("double", monkeypatch)
    fn, updates = Kernels.fn, []

    def counting(self, name):
        f = fn(self, name)
        return (lambda *a: (updates.append(1), f(*a))[1]) if name == "sgd_update" else f

    monkeypatch.setattr(Kernels, "fn", counting)
    m = runtime.load("cnn", precision="f64", init="random")
    m.set_params(exploding(m))
    before = m.get_params()
    x, y = data()
    x = x.astype(np.float64) * 1e200  # finite, and outside [0, 1] is allowed
    with pytest.raises(runtime.DivergedError, match=r"loss of batch 1 of epoch 1 is nan.*lr 0\.5"
                       r".*the initial ones"):
        m.train(x, y, epochs=2, batch_size=20, lr=0.5, threads=1, progress=False)
    for n, a in before.items():
        assert m.params[n].tobytes() == a.tobytes(), n
    assert m.history["epoch"] == [] and updates == []      # the NaN batch was never applied


def poison_in_epoch(monkeypatch, m, epoch, batches_per_epoch, update="sgd_update"):
    """Make ``update`` leave inf in ``b`` after the first update of ``epoch`` (the loss of
    that batch was finite)."""
    fn = Kernels.fn
    calls = []

    def patched(self, name):
        f = fn(self, name)
        if name != update:
            return f

        def sgd(*args):
            f(*args)
            calls.append(1)
            if len(calls) == (epoch - 1) * batches_per_epoch + 1:
                m.params["b"][3] = np.inf

        return sgd

    monkeypatch.setattr(Kernels, "fn", patched)


def test_inf_weight_restores_the_last_epoch(monkeypatch):
    use_backend("double", monkeypatch)
    x, y = data()
    ref = runtime.load("cnn", init="random", seed=1)
    ref.train(x, y, epochs=1, batch_size=20, lr=0.5, threads=1, progress=False)
    m = runtime.load("cnn", init="random", seed=1)
    poison_in_epoch(monkeypatch, m, epoch=2, batches_per_epoch=3)
    with pytest.raises(runtime.DivergedError, match="epoch 2 left NaN or inf in b.*after epoch 1"):
        m.train(x, y, epochs=3, batch_size=20, lr=0.5, threads=1, progress=False)
    for n in ref.params:
        assert m.params[n].tobytes() == ref.params[n].tobytes(), n
    assert m.history["epoch"] == [1] and m.history["loss"] == ref.history["loss"]


@pytest.mark.parametrize("epoch", [1, 2])
def test_a_divergence_gives_back_the_velocity_of_its_weights(monkeypatch, tmp_path, epoch):
    """With momentum, the velocity goes back with the weights: to that after the last complete
    epoch, or (in the first) to the one the call started from, here a weights file's."""
    use_backend("double", monkeypatch)
    x, y = data()
    kw = dict(batch_size=20, lr=0.5, threads=1, progress=False, momentum=0.9)
    start = runtime.load("cnn", seed=1)
    start.train(x, y, epochs=1, **kw)
    start.save(tmp_path / "w.npz")
    ref = runtime.load("cnn", weights=tmp_path / "w.npz")
    ref.train(x, y, epochs=epoch - 1, **kw)
    m = runtime.load("cnn", weights=tmp_path / "w.npz")
    poison_in_epoch(monkeypatch, m, epoch, batches_per_epoch=3, update="sgd_momentum_update")
    with pytest.raises(runtime.DivergedError, match=f"epoch {epoch} left NaN or inf in b"):
        m.train(x, y, epochs=3, **kw)
    for n in ref.params:
        assert m.params[n].tobytes() == ref.params[n].tobytes(), n
        assert m.velocity[n].tobytes() == ref.velocity[n].tobytes(), n
    assert m.velocity_momentum == 0.9


def test_a_first_epoch_divergence_gives_back_the_velocity_the_call_found(monkeypatch):
    """Diverging in its first epoch, a call leaves the velocity as it found it: another mu's
    (not this call's), none (not a zero one), or, for plain SGD, the one it would have
    dropped."""
    use_backend("double", monkeypatch)
    x, y = data()
    kw = dict(batch_size=20, lr=0.5, threads=1, progress=False)
    m = runtime.load("cnn", seed=1)
    m.train(x, y, epochs=1, momentum=0.5, **kw)
    found = m.velocity
    poison_in_epoch(monkeypatch, m, 1, batches_per_epoch=3, update="sgd_momentum_update")
    with pytest.raises(runtime.DivergedError):
        m.train(x, y, epochs=1, momentum=0.9, **kw)
    assert m.velocity_momentum == 0.5
    assert all(m.velocity[n].tobytes() == found[n].tobytes() for n in found)
    monkeypatch.undo()
    use_backend("double", monkeypatch)
    poison_in_epoch(monkeypatch, m, 1, batches_per_epoch=3)  # plain SGD's update
    with pytest.raises(runtime.DivergedError):
        m.train(x, y, epochs=1, **kw)
    assert m.velocity_momentum == 0.5
    assert all(m.velocity[n].tobytes() == found[n].tobytes() for n in found)
    monkeypatch.undo()
    use_backend("double", monkeypatch)
    fresh = runtime.load("cnn", seed=1)
    poison_in_epoch(monkeypatch, fresh, 1, batches_per_epoch=3, update="sgd_momentum_update")
    with pytest.raises(runtime.DivergedError):
        fresh.train(x, y, epochs=1, momentum=0.9, **kw)
    assert fresh.velocity is None and fresh.velocity_momentum is None


def interrupt_at_first_gradient(monkeypatch):
    """Ctrl-C arrives in the first batch, before any update."""
    fn = Kernels.fn

    def interrupting(self, name):
        f = fn(self, name)
        if name != "batch_grad":
            return f

        def grad(*a):
            raise KeyboardInterrupt

        return grad

    monkeypatch.setattr(Kernels, "fn", interrupting)


def test_an_interrupt_before_the_first_update_leaves_the_velocity_as_it_was(monkeypatch, tmp_path):
    """Nothing learned, nothing changed: a fresh momentum run gains no (zero) velocity, plain SGD
    does not drop the one it found, another mu's stays with its mu; through the CLI, a fresh
    momentum run interrupted at once writes a weights file without a velocity."""
    use_backend("double", monkeypatch)
    x, y = data()
    kw = dict(batch_size=20, lr=0.5, threads=1, progress=False)
    m = runtime.load("cnn", seed=1)
    m.train(x, y, epochs=1, momentum=0.5, **kw)
    found = m.velocity
    fresh = runtime.load("cnn", seed=1)
    interrupt_at_first_gradient(monkeypatch)
    for model, mu in [(fresh, 0.9), (m, 0.0), (m, 0.9)]:
        with pytest.raises(KeyboardInterrupt):
            model.train(x, y, epochs=2, momentum=mu, **kw)
    assert fresh.velocity is None and fresh.velocity_momentum is None
    assert m.velocity_momentum == 0.5
    assert all(m.velocity[n].tobytes() == found[n].tobytes() for n in found)
    out = tmp_path / "run"
    rc = main(["train", "cnn", "--epochs", "2", "--batch-size", "20", "--threads", "1",
               "--train-limit", "60", "--test-limit", "20", "--momentum", "0.9", "--out",
               str(out), "--no-progress"])
    assert rc == 130
    with np.load(out / "weights.npz") as f:
        assert not [k for k in f.files if k.startswith("velocity/")]
        assert json.loads(str(f["__meta__"]))["version"] == 1


def test_cli_keeps_the_last_good_epoch(tmp_path, monkeypatch, capsys):
    use_backend("double", monkeypatch)
    x, y = data()
    ref = runtime.load("cnn", init="random")
    ref.train(x, y, epochs=1, batch_size=20, lr=0.5, threads=1, progress=False)
    m_holder = {}
    real_load = runtime.__main__.load

    def load(*args, **kwargs):
        m_holder["m"] = m = real_load(*args, **kwargs)
        poison_in_epoch(monkeypatch, m, epoch=2, batches_per_epoch=3)
        return m

    monkeypatch.setattr(runtime.__main__, "load", load)
    out = tmp_path / "run"
    rc = main(["train", "cnn", "--epochs", "3", "--batch-size", "20", "--lr", "0.5",
               "--threads", "1", "--train-limit", "60", "--test-limit", "20", "--init",
               "random", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "training diverged" in err and "holds epoch 1" in err
    saved = runtime.load("cnn", weights=out / "weights.npz")
    for n in ref.params:
        assert saved.params[n].tobytes() == ref.params[n].tobytes(), n
    assert json.loads((out / "history.json").read_text())["epoch"] == [1]


def test_a_run_diverging_at_once_leaves_its_folder_as_it_was(tmp_path, monkeypatch, capsys):
    """Diverging in the first epoch: an earlier run's weights, history and curves stay as they
    were (none is replaced before this run has weights of its own), and a folder the run made
    is removed again."""
    use_backend("double", monkeypatch)
    args = ["--epochs", "2", "--batch-size", "20", "--lr", "0.5", "--threads", "1",
            "--train-limit", "60", "--test-limit", "20", "--no-progress"]
    out = tmp_path / "run"
    assert main(["train", "cnn", *args, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(before) == ["curves.png", "history.json", "weights.npz"]
    real_load = runtime.__main__.load

    def load(*a, **kw):
        m = real_load(*a, **kw)
        poison_in_epoch(monkeypatch, m, epoch=1, batches_per_epoch=3)
        return m

    monkeypatch.setattr(runtime.__main__, "load", load)
    capsys.readouterr()
    assert main(["train", "cnn", *args, "--out", str(out)]) == 2
    assert f"{out} is as it was before this run" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    fresh = tmp_path / "new" / "deeper" / "run"
    assert main(["train", "cnn", *args, "--out", str(fresh)]) == 2
    assert "no weights written" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()  # every folder the run made


def test_no_weights_file_holds_nan(tmp_path, monkeypatch):
    use_backend("double", monkeypatch)
    m = runtime.load("cnn")
    m.params["b"][0] = np.nan  # a view: nothing checks a write through it
    with pytest.raises(ValueError, match="parameter b holds NaN or inf.*not written"):
        m.save(tmp_path / "w.npz")
    assert list(tmp_path.iterdir()) == []
    m.params["b"][0] = 0.5
    m.save(tmp_path / "w.npz")
    # a file made by other means: the loader names it
    with np.load(tmp_path / "w.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["k2"] = arrays["k2"].copy()
    arrays["k2"][0, 0, 0, 0] = np.inf
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"bad\.npz.*'k2' holds NaN or inf"):
        runtime.load("cnn", weights=tmp_path / "bad.npz")


def test_cli_trains_on_an_npz(tmp_path, monkeypatch, capsys):
    """Standardised features (outside [0, 1]) from an .npz, as a user's own data would be."""
    use_backend("double", monkeypatch)
    x, y = data(80)
    xs = ((x - x.mean()) / x.std()).astype(np.float32)
    path = tmp_path / "mine.npz"
    np.savez(path, x_train=xs[:60], y_train=y[:60].astype(np.uint8), x_test=xs[60:],
             y_test=y[60:])
    out = tmp_path / "run"
    rc = main(["train", "cnn", "--data", str(path), "--epochs", "1", "--batch-size", "20",
               "--threads", "1", "--init", "random", "--out", str(out), "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0 and "on 60 images" in text and "testing on 20" in text
    ref = runtime.load("cnn", init="random")
    ref.train(xs[:60], y[:60], epochs=1, batch_size=20, threads=1, progress=False,
              test=(xs[60:], y[60:]))
    assert json.loads((out / "history.json").read_text())["loss"] == ref.history["loss"]
    rc = main(["predict", "cnn", "--weights", str(out / "weights.npz"), "--data", str(path)])
    assert rc == 0 and f"accuracy {ref.history['test_accuracy'][0]:.4f}" in capsys.readouterr().out

    # uint8 pixels are scaled like the IDX reader's
    np.savez(path, x_train=np.round(x * 255).astype(np.uint8), y_train=y)
    images, labels = runtime.data.load_split(path, "train", 5)
    np.testing.assert_array_equal(images, x[:5])
    np.testing.assert_array_equal(labels, y[:5])
    # no test split: said, not silent (and not said with --test-limit 0)
    for extra, said in (([], True), (["--test-limit", "0"], False)):
        assert main(["train", "cnn", "--data", str(path), "--epochs", "0", "--out", str(out),
                     "--no-progress", *extra]) == 0
        assert ("has no test split" in capsys.readouterr().out) == said


@pytest.mark.parametrize("arrays,message", [
    ({"x_train": np.zeros((3, 28, 28), np.float32)}, "no array y_train.*it has x_train"),
    ({"x_train": np.zeros((3, 28, 28), np.int32), "y_train": np.zeros(3, int)},
     "x_train must be float32, float64 or uint8"),
    ({"x_train": np.zeros((3, 28, 28), np.float32), "y_train": np.zeros(3)},
     r"float targets must have shape \(3, 10\)"),
    ({"x_train": np.zeros((3, 28, 28), np.float32), "y_train": np.zeros(3, bool)},
     "y_train must hold integer labels or float32/float64 targets"),
    ({"x_train": np.zeros((3, 28, 28), np.float32), "y_train": np.zeros(4, int)},
     r"shape \(3, 28, 28\) and y_train \(4,\)"),
    ({"x_train": np.zeros((3, 5), np.float32), "y_train": np.zeros(3, int)},
     r"images must have shape \(N, 28, 28\), got \(3, 5\)"),
])
def test_npz_errors(tmp_path, monkeypatch, capsys, arrays, message):
    use_backend("double", monkeypatch)
    path = tmp_path / "d.npz"
    np.savez(path, **arrays)
    rc = main(["train", "cnn", "--data", str(path), "--out", str(tmp_path / "o"),
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert re.search(message, err), err
    assert not (tmp_path / "o").exists()


def test_not_an_npz(tmp_path, capsys):
    path = tmp_path / "d.npz"
    path.write_bytes(b"not a zip")
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((3, 28, 28), np.float32))
    objects = tmp_path / "o.npz"
    np.savez(objects, x_train=np.array([None, 1], dtype=object), y_train=np.zeros(2, int))
    text = tmp_path / "t.txt"
    text.write_text("hello\n")
    for data, message in ((path, "d.npz: not a NumPy .npz archive"),
                          (text, "t.txt: not a NumPy .npz archive (it begins b'hello\\n', an "
                                 ".npz is a zip archive"),
                          (npy, "x.npy: a single array (.npy), not an .npz archive"),
                          (objects, "o.npz: x_train: Object arrays cannot be loaded")):
        assert main(["train", "cnn", "--data", str(data), "--no-progress", "--out",
                     str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


def test_cli_shuffle_and_limits(tmp_path, monkeypatch, capsys):
    use_backend("double", monkeypatch)
    out = tmp_path / "run"
    rc = main(["train", "cnn", "--epochs", "2", "--batch-size", "20", "--threads", "1",
               "--train-limit", "60", "--test-limit", "0", "--shuffle", "--seed", "3",
               "--init", "random", "--out", str(out), "--no-progress"])
    text = capsys.readouterr().out
    assert rc == 0 and "testing on" not in text
    history = json.loads((out / "history.json").read_text())
    assert history["test_accuracy"] == [None, None]
    x, y = data()
    ref = runtime.load("cnn", init="random", seed=3)
    ref.train(x, y, epochs=2, batch_size=20, threads=1, progress=False, shuffle=True, seed=3)
    assert history["loss"] == ref.history["loss"]
    plain = runtime.load("cnn", init="random", seed=3)
    plain.train(x, y, epochs=2, batch_size=20, threads=1, progress=False)
    assert plain.history["loss"] != ref.history["loss"]       # the order did change
    for bad in (["--train-limit", "0"], ["--test-limit", "-1"], ["--train-limit", "x"]):
        with pytest.raises(SystemExit) as info:
            main(["train", "cnn", "--out", str(tmp_path / "o"), *bad])
        assert info.value.code == 2
        assert "whole number" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_ctrl_c_that_lands_in_a_finaliser_still_stops_training(monkeypatch):
    """Python raises a Ctrl-C wherever the main thread is; in a finaliser (the garbage collector
    runs them at any time) it is printed as "Exception ignored" and lost. Training takes
    Ctrl-C between batches instead: the run stops after the epoch it arrived in, with that
    epoch kept, and Python's own handler is back afterwards."""
    import os
    import signal

    use_backend("double", monkeypatch)
    x, y = data()

    class Finalised:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs here, inside the finaliser
                pass

    m = runtime.load("cnn", seed=1)
    # Python's own handler, as in a terminal: a process started by a shell's `&` (a CI job may
    # be) inherits SIGINT ignored, and training then leaves Ctrl-C alone (second half below)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            m.train(x, y, epochs=3, batch_size=20, lr=0.1, threads=1, progress=False,
                    callback=lambda model, record: Finalised())
        assert m.history["epoch"] == [1]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        # ignored, Ctrl-C stays ignored: training neither takes it nor changes the disposition
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        m.train(x, y, epochs=2, batch_size=20, lr=0.1, threads=1, progress=False,
                callback=lambda model, record: Finalised())
        assert m.history["epoch"] == [1, 2, 3]  # the history accumulates across calls
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)

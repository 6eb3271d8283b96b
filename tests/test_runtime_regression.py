"""Float targets (a regression): a model file with a one-element target, trained on the targets
themselves rather than on classes, from Python and from the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import runtime
from runtime.__main__ import main

pytestmark = pytest.mark.agda  # a model file: elaborated by the Agda executable

MODEL = """model lin
input  x : 5
target y : 1
param  w : 1x5
param  b : 1
output out = dense(w, x, b)
loss loss = sqerr(out, y)
"""
TRUE_W, TRUE_B = np.array([0.5, -1.0, 2.0, 0.0, 1.5]), 0.25


def data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 5))
    return x, (x @ TRUE_W + TRUE_B)


@pytest.fixture
def model_file(tmp_path):
    from extract.emit import build
    if not build.agda_main().exists():
        pytest.skip("no Agda executable (make dump)")
    path = tmp_path / "lin.model"
    path.write_text(MODEL)
    return path


def test_gradients_of_float_targets_are_those_of_the_squared_error(model_file):
    m = runtime.load(model_file, precision="f64", seed=1)
    x, y = data(7, 0)
    w, b = m.params["w"].copy(), m.params["b"].copy()
    loss, grads = m.loss_and_gradients(x, y)
    r = x @ w[0] + b[0] - y                       # residuals; the loss is ½ r² per sample
    assert loss == pytest.approx(0.5 * np.mean(r ** 2), rel=1e-12)
    np.testing.assert_allclose(grads["w"][0], (r[:, None] * x).mean(0), rtol=1e-12)
    np.testing.assert_allclose(grads["b"], [r.mean()], rtol=1e-12)
    # (n, 1) targets mean the same as (n,); classes are refused with a hint
    assert m.loss_and_gradients(x, y[:, None])[0] == loss
    with pytest.raises(ValueError, match="one element: for regression give float targets"):
        m.loss_and_gradients(x, np.arange(7))
    with pytest.raises(ValueError, match="accuracy of integer labels"):
        m.evaluate(x, y)
    with pytest.raises(ValueError, match=r"targets contain NaN .* sample 2"):
        m.mean_loss(x, np.where(np.arange(7) == 2, np.nan, y))


def test_training_fits_the_line_and_reports_the_test_loss(model_file):
    m = runtime.load(model_file, precision="f64", seed=1)
    x, y = data(400, 1)
    xt, yt = data(100, 2)
    h = m.train(x, y, epochs=20, batch_size=20, lr=0.1, progress=False, test=(xt, yt),
                momentum=0.5)
    assert h["train_accuracy"] == [None] * 20 and h["test_accuracy"] == [None] * 20
    assert h["test_loss"][-1] < 1e-6 < h["test_loss"][0]
    assert h["test_loss"][-1] == pytest.approx(m.mean_loss(xt, yt), rel=1e-12)
    np.testing.assert_allclose(m.params["w"][0], TRUE_W, atol=1e-3)
    np.testing.assert_allclose(m.params["b"], [TRUE_B], atol=1e-3)


def test_the_command_line_trains_and_predicts_float_targets(model_file, tmp_path, capsys):
    x, y = data(300, 3)
    path = tmp_path / "lin.npz"
    np.savez(path, x_train=x[:200].astype(np.float32), y_train=y[:200, None],
             x_test=x[200:].astype(np.float32), y_test=y[200:])
    out = tmp_path / "run"
    assert main(["train", str(model_file), "--data", str(path), "--epochs", "5", "--lr", "0.1",
                 "--batch-size", "10", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "test loss" in text and "acc" not in text, text
    history = json.loads((out / "history.json").read_text())
    assert len(history["test_loss"]) == 5 and history["test_loss"][-1] < history["test_loss"][0]
    assert (out / "curves.png").stat().st_size > 0
    assert main(["predict", str(model_file), "--weights", str(out / "weights.npz"),
                 "--data", str(path), "--out", str(tmp_path / "p.csv")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("loss ") and "accuracy" not in text, text
    rows = (tmp_path / "p.csv").read_text().splitlines()
    assert rows[0] == "out0" and len(rows) == 101
    # on from the saved weights, in their directory: the test loss it starts from, and the
    # history goes on (epoch 6 after the earlier 5)
    assert main(["train", str(model_file), "--data", str(path), "--epochs", "1", "--lr", "0.1",
                 "--batch-size", "10", "--out", str(out), "--no-progress",
                 "--weights", str(out / "weights.npz")]) == 0
    text = capsys.readouterr().out
    assert f"test loss of {out / 'weights.npz'}: {history['test_loss'][-1]:.5f}" in text, text
    joined = json.loads((out / "history.json").read_text())
    assert joined["epoch"] == [1, 2, 3, 4, 5, 6] and joined["test_loss"][:5] == history["test_loss"]


def test_a_vector_regression_predicts_outputs_not_classes(tmp_path, capsys):
    """Two float targets per sample: ``predict --out`` writes the outputs, no class column."""
    from extract.emit import build
    if not build.agda_main().exists():
        pytest.skip("no Agda executable (make dump)")
    model = tmp_path / "two.model"
    model.write_text(MODEL.replace("model lin", "model two").replace("y : 1", "y : 2")
                     .replace("w : 1x5", "w : 2x5").replace("b : 1", "b : 2"))
    x, y = data(40, 4)
    path = tmp_path / "two.npz"
    np.savez(path, x_train=x, y_train=np.stack([y, -y], 1), x_test=x[:9],
             y_test=np.stack([y, -y], 1)[:9])
    out = tmp_path / "run"
    assert main(["train", str(model), "--data", str(path), "--epochs", "1", "--out", str(out),
                 "--no-progress"]) == 0
    assert main(["predict", str(model), "--weights", str(out / "weights.npz"), "--data",
                 str(path), "--out", str(tmp_path / "p.npz")]) == 0
    text = capsys.readouterr().out
    assert "predicted labels" not in text and "one-hot" not in text
    with np.load(tmp_path / "p.npz") as z:
        assert z.files == ["outputs"] and z["outputs"].shape == (9, 2)
    # data without targets: the weights file records that they were fitted to values
    with np.load(out / "weights.npz") as f:
        assert json.loads(str(f["__meta__"]))["targets"] == "values"
    np.savez(path, x_train=x, y_train=np.stack([y, -y], 1), x_test=x[:9])
    assert main(["predict", str(model), "--weights", str(out / "weights.npz"), "--data",
                 str(path), "--out", str(tmp_path / "q.csv")]) == 0
    assert "predicted labels" not in capsys.readouterr().out
    assert (tmp_path / "q.csv").read_text().splitlines()[0] == "out0,out1"
    # trained on classes (the same data, as labels 0/1), the same file gives classes
    cls = tmp_path / "cls.npz"
    np.savez(cls, x_train=x, y_train=(y > 0).astype(np.int64), x_test=x[:9],
             y_test=(y[:9] > 0).astype(np.int64))
    assert main(["train", str(model), "--data", str(cls), "--epochs", "1", "--out",
                 str(tmp_path / "cls"), "--no-progress"]) == 0
    assert main(["predict", str(model), "--weights", str(tmp_path / "cls" / "weights.npz"),
                 "--data", str(path), "--out", str(tmp_path / "r.csv")]) == 0
    assert "outputs and predicted labels" in capsys.readouterr().out
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == "label,out0,out1"
    # one-hot float targets train as values: a note says so (none for the floats above)
    hot = tmp_path / "hot.npz"
    onehot = np.eye(2)[(y > 0).astype(np.int64)]
    np.savez(hot, x_train=x, y_train=onehot, x_test=x[:9], y_test=onehot[:9])
    assert main(["train", str(model), "--data", str(hot), "--epochs", "1", "--out",
                 str(tmp_path / "hot"), "--no-progress"]) == 0
    assert "note: the targets are floats that are one-hot rows: they train as values" in \
        capsys.readouterr().out

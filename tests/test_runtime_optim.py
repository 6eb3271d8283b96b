"""runtime.optim: the generated Adam, AdamW and SGD updates (weight decay, clipping by norm,
schedules) against torch.optim's on the same gradients; their state saved and resumed; the
training API around them (validation_split, early stopping, history, predict_proba)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import runtime
from runtime import optim

TINY = """model tiny
input  x : 3x4
target y : 2
param  w : 5x3x4
param  b : 5
param  v : 2x5
z = dense(w, x, b)
h = logistic(z)
output o = dense(v, h)
m  = maxall(o)
se = sum j : 2 . exp(o[j] - m)
loss loss = log(se) + m - (sum j : 2 . y[j] * o[j])
"""

STEPS = 100
CASES = {  # (optimizer, schedule, warmup, weight decay, clip norm, momentum)
    "adam": ("adam", None, 0, 0.0, None, 0.0),
    "adam-l2": ("adam", None, 0, 0.1, None, 0.0),
    "adamw": ("adamw", None, 0, 0.1, None, 0.0),
    "adam-cosine-warmup": ("adam", "cosine", 10, 0.0, None, 0.0),
    "adamw-step-warmup-clip": ("adamw", "step", 5, 0.05, 1.0, 0.0),
    "adam-clip": ("adam", "cosine", 0, 0.0, 3.0, 0.0),
    "sgd-momentum-decay": ("sgd", None, 0, 0.1, None, 0.9),
    "sgd-cosine-clip": ("sgd", "cosine", 10, 0.0, 2.0, 0.9),
}


def _torch_optimizer(torch, params, kind, schedule, warmup, wd, momentum, lr, steps):
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[kind]
    opt = cls(params, lr=lr, weight_decay=wd, **({"momentum": momentum} if kind == "sgd" else {}))
    s = []
    if warmup:
        s.append(torch.optim.lr_scheduler.LinearLR(opt, 1 / warmup, 1.0, warmup - 1))
    if schedule == "cosine":
        s.append(torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps - warmup))
    if schedule == "step":
        s.append(torch.optim.lr_scheduler.StepLR(opt, 30, 0.5))
    if len(s) == 2:
        return opt, torch.optim.lr_scheduler.SequentialLR(opt, s, [warmup])
    return opt, (s[0] if s else None)


@pytest.mark.parametrize("case", CASES)
def test_update_kernels_equal_torch_optim_f32(case):
    """100 steps on the same random gradients: every parameter within 1e-6 (relative, in
    norm) of torch.optim's, float32."""
    torch = pytest.importorskip("torch")
    kind, schedule, warmup, wd, clip, momentum = CASES[case]
    m = runtime.load(TINY, precision="f32", seed=0)
    cfg = optim.check(kind, momentum, wd, clip_norm=clip, schedule=schedule, warmup=warmup,
                      step_size=30, gamma=0.5)
    state = optim.State(cfg)
    upd = optim.Updater(m, state, 0.01, STEPS)
    ps = {n: torch.tensor(m.params[n].copy(), requires_grad=True) for n in m.spec.trained}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SequentialLR's deprecation notes
        opt, sched = _torch_optimizer(torch, list(ps.values()), kind, schedule, warmup, wd,
                                      momentum, 0.01, STEPS)
        rng = np.random.default_rng(1)
        grad = m._views(m._g)
        for _ in range(STEPS):
            for n in m.spec.trained:
                g = rng.standard_normal(grad[n].shape).astype(np.float32)
                grad[n][...] = g
                ps[n].grad = torch.from_numpy(g.copy())
            if clip:
                torch.nn.utils.clip_grad_norm_(list(ps.values()), clip)
            opt.step()
            if sched:
                sched.step()
            upd.step(m._w, m._g)
    assert state.step == STEPS
    for n, p in ps.items():
        ref = p.detach().numpy()
        err = np.linalg.norm(m.params[n] - ref) / np.linalg.norm(ref)
        assert err <= 1e-6, (n, err)


def test_lr_factor_schedules():
    c = optim.check("adam", schedule="cosine", warmup=4)
    assert [optim.lr_factor(c, t, 14) for t in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert optim.lr_factor(c, 9, 14) == pytest.approx(0.5)
    assert optim.lr_factor(c, 14, 14) == 0 and optim.lr_factor(c, 20, 14) == 0
    s = optim.check("sgd", schedule="step", step_size=3, gamma=0.5)
    assert [optim.lr_factor(s, t, 0) for t in (0, 2, 3, 6)] == [1, 1, 0.5, 0.25]
    for bad in (dict(optimizer="rmsprop"), dict(schedule="linear"), dict(warmup=-1),
                dict(optimizer="adam", momentum=0.9), dict(betas=(0.9, 1.0)), dict(eps=0)):
        with pytest.raises(ValueError):
            optim.check(**bad)


def _data(n=60, seed=2):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3, 4)), rng.integers(0, 2, n)


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_state_is_saved_and_resumed_exactly(kind, tmp_path):
    x, y = _data()
    kw = dict(batch_size=10, lr=0.01, threads=1, progress=False, optimizer=kind,
              weight_decay=0.01, schedule="cosine", warmup=3, schedule_steps=24, clip_norm=5.0,
              momentum=0.9 if kind == "sgd" else 0.0)
    whole = runtime.load(TINY, precision="f64", seed=3)
    whole.train(x, y, epochs=4, **kw)
    half = runtime.load(TINY, precision="f64", seed=3)
    half.train(x, y, epochs=2, **kw)
    half.save(tmp_path / "w.npz")
    resumed = runtime.load(TINY, weights=tmp_path / "w.npz")
    assert resumed.optimizer_state.step == 12 and resumed.optimizer_state.total == 24
    resumed.train(x, y, epochs=2, **kw)
    for n in whole.params:
        assert resumed.params[n].tobytes() == whole.params[n].tobytes(), n
    assert resumed.history["lr"] == whole.history["lr"][2:]


def test_validation_split_early_stopping_history_and_callback():
    x, y = _data(100)
    m = runtime.load(TINY, precision="f64", seed=4)
    seen = []
    h = m.train(x, y, epochs=3, batch_size=10, lr=0.05, threads=1, progress=False,
                optimizer="adam", validation_split=0.2,
                callback=lambda model, record: seen.append(record["epoch"]))
    assert h["epoch"] == [1, 2, 3] and seen == [1, 2, 3]
    assert h["val_loss"][-1] == pytest.approx(m.mean_loss(x[80:], y[80:]))
    assert h["val_accuracy"][-1] == m.evaluate(x[80:], y[80:])
    # the history accumulates across calls, epochs numbered on; the call returns its own
    h2 = m.train(x, y, epochs=2, batch_size=10, lr=0.05, threads=1, progress=False,
                 optimizer="adam", callback=lambda model, record: False)  # stops after one
    assert h2["epoch"] == [4] and m.history["epoch"] == [1, 2, 3, 4]
    assert m.history["val_loss"][3] is None and len(m.history["loss"]) == 4
    # early stopping: a learning rate so large that the validation loss stops improving
    m3 = runtime.load(TINY, precision="f64", seed=4)
    h3 = m3.train(x, y, epochs=30, batch_size=10, lr=0.5, threads=1, progress=False,
                  optimizer="adam", validation_split=0.2, patience=2)
    best = int(np.argmin(h3["val_loss"]))
    assert len(h3["epoch"]) == best + 3 < 30
    with pytest.raises(ValueError, match="needs validation_split"):
        m3.train(x, y, epochs=1, progress=False, patience=1)
    with pytest.raises(ValueError, match="validation_split"):
        m3.train(x, y, epochs=1, progress=False, validation_split=1.0)


def test_predict_proba_is_the_softmax_of_the_logits():
    x, _ = _data(7)
    m = runtime.load(TINY, precision="f64", seed=5)
    p = m.predict_proba(x)
    z = m.predict(x)
    assert p.shape == (7, 2) and np.allclose(p.sum(axis=1), 1)
    assert np.allclose(p, np.exp(z) / np.exp(z).sum(axis=1, keepdims=True), rtol=1e-14)


def test_cli_optimizer_flags_save_and_resume_the_state(tmp_path):
    from runtime.__main__ import main

    model = tmp_path / "tiny.model"
    model.write_text(TINY)
    x, y = _data(50)
    np.savez(tmp_path / "d.npz", x_train=x, y_train=y)
    flags = ["--optimizer", "adamw", "--lr", "0.01", "--weight-decay", "0.01", "--schedule",
             "cosine", "--warmup", "2", "--schedule-steps", "20", "--clip-norm", "5",
             "--batch-size", "10", "--threads", "1", "--no-progress", "--precision", "f64",
             "--data", str(tmp_path / "d.npz")]
    assert main(["train", str(model), "--epochs", "4", "--out", str(tmp_path / "whole"),
                 *flags]) == 0
    assert main(["train", str(model), "--epochs", "2", "--out", str(tmp_path / "half"),
                 *flags]) == 0
    half = tmp_path / "half" / "weights.npz"
    assert runtime.load(model, weights=half).optimizer_state.step == 10
    assert main(["train", str(model), "--epochs", "2", "--out", str(tmp_path / "half"),
                 "--weights", str(half), *flags]) == 0
    whole = runtime.load(model, weights=tmp_path / "whole" / "weights.npz")
    resumed = runtime.load(model, weights=half)
    assert resumed.optimizer_state.step == whole.optimizer_state.step == 20
    for n in whole.params:
        assert resumed.params[n].tobytes() == whole.params[n].tobytes(), n
    with pytest.raises(SystemExit):
        main(["train", str(model), "--optimizer", "rmsprop"])
    bad = [("-1" if f == "2" else f) for f in flags]  # --warmup -1
    assert main(["train", str(model), "--out", str(tmp_path / "bad"), *bad]) == 2
    assert not (tmp_path / "bad").exists()

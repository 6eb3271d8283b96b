"""Weights files: validated against the model's dump shapes; any damaged file is a ValueError
naming it; files the runtime writes get the permissions of the umask."""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile

import numpy as np
import pytest

import runtime
from runtime.__main__ import main
from runtime.weights import load_weights, save_weights
from test_runtime_cdouble import use_backend


@pytest.fixture
def saved(tmp_path, monkeypatch):
    use_backend("double", monkeypatch)
    m = runtime.load("cnn", init="random", seed=4)
    path = tmp_path / "w.npz"
    m.save(path)
    return m, path


def _rewrite(path, drop=(), replace=None):
    """Rewrite the archive at ``path`` without the members ``drop`` (names without .npy) and
    with ``replace`` (name -> bytes of a member)."""
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i.filename) for i in z.infolist()}
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            if name[:-4] in drop:
                continue
            z.writestr(name, (replace or {}).get(name[:-4], data))


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_damaged_files_raise_value_error_naming_the_file(saved, tmp_path):
    m, good = saved
    raw = good.read_bytes()
    damaged = {}
    damaged["truncated"] = raw[:100]
    damaged["half"] = raw[: len(raw) // 2]
    damaged["random"] = np.random.default_rng(0).bytes(4096)
    damaged["empty"] = b""
    flipped = bytearray(raw)
    flipped[len(raw) // 3] ^= 0xFF  # inside an array's data: CRC mismatch
    damaged["flipped"] = bytes(flipped)
    for name, data in damaged.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(data)
        with pytest.raises(ValueError, match=rf"{path}: ") as e:
            runtime.load("cnn", weights=path)
        assert "\n" not in str(e.value), name

    missing = tmp_path / "missing-array.npz"
    missing.write_bytes(raw)
    _rewrite(missing, drop=("fc",))
    with pytest.raises(ValueError, match=rf"{missing}: parameter 'fc' missing"):
        runtime.load("cnn", weights=missing)

    bad_meta = tmp_path / "bad-meta.npz"
    bad_meta.write_bytes(raw)
    _rewrite(bad_meta, replace={"__meta__": _npy(np.array("{not json"))})
    with pytest.raises(ValueError, match=rf"{bad_meta}: not a weights file \(__meta__ is not"):
        runtime.load("cnn", weights=bad_meta)

    with pytest.raises(ValueError, match=rf"{tmp_path / 'nowhere.npz'}: no such file"):
        runtime.load("cnn", weights=tmp_path / "nowhere.npz")


def test_shapes_are_checked_against_the_dump(saved, tmp_path):
    """A file consistent with itself (meta and array agree) but not with the model's dump."""
    m, good = saved
    params = m.get_params()
    params["fc"] = params["fc"].reshape(10, 192)
    path = tmp_path / "flat-fc.npz"
    save_weights(path, params, "cnn", "f32")  # shapes taken from the arrays
    with pytest.raises(ValueError, match=rf"{path}: parameter 'fc' has shape \(10, 192\), "
                                         rf"expected \(10, 12, 1, 4, 4\)"):
        runtime.load("cnn", weights=path)
    # the same file read without the model's shapes is fine (it agrees with itself)
    loaded, meta = load_weights(path)
    assert loaded["fc"].shape == (10, 192) and meta["shapes"]["fc"] == [10, 192]
    # extra parameters and files of another model are refused
    params = m.get_params()
    params["extra"] = np.zeros(3, np.float32)
    path = tmp_path / "extra.npz"
    save_weights(path, params, "cnn", "f32")
    with pytest.raises(ValueError, match=r"unexpected parameter\(s\) \['extra'\]"):
        runtime.load("cnn", weights=path)
    path = tmp_path / "dot.npz"
    save_weights(path, {"a": np.zeros(5), "b": np.zeros(5)}, "dot", "f64")
    with pytest.raises(ValueError, match=r"weights are for model 'dot', not 'cnn'"):
        runtime.load("cnn", weights=path)


def test_weights_round_trip_in_meta(saved):
    m, good = saved
    with np.load(good) as f:
        meta = json.loads(str(f["__meta__"]))
    assert meta["model"] == "cnn" and meta["shapes"]["k2"] == [12, 6, 5, 5]
    m2 = runtime.load("cnn", weights=good)
    for n in m.params:
        assert m2.params[n].tobytes() == m.params[n].tobytes()


def test_what_the_weights_were_trained_on_is_kept(saved, tmp_path):
    """``targets``: unknown (None, no key) for fresh weights, "classes" after training on labels,
    kept by save and load; a file with another value is refused, naming it."""
    m, good = saved
    with np.load(good) as f:
        assert "targets" not in json.loads(str(f["__meta__"]))
    assert runtime.load("cnn", weights=good).targets is None
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 20)
    m.train(x, y, epochs=1, batch_size=10, threads=1, progress=False)
    assert m.targets == "classes"
    m.save(tmp_path / "t.npz")
    assert runtime.load("cnn", weights=tmp_path / "t.npz").targets == "classes"
    with np.load(tmp_path / "t.npz") as f:
        meta = json.loads(str(f["__meta__"]))
    assert meta["targets"] == "classes" and meta["version"] == 1
    _rewrite(tmp_path / "t.npz",
             replace={"__meta__": _npy(np.array(json.dumps({**meta, "targets": "labels"})))})
    with pytest.raises(ValueError, match=rf"t.npz: __meta__'s targets is 'labels', expected "):
        runtime.load("cnn", weights=tmp_path / "t.npz")
    with pytest.raises(ValueError, match="targets must be one of"):
        save_weights(tmp_path / "u.npz", m.get_params(), m.spec, "f32", targets="labels")


def test_a_velocity_is_checked_like_the_weights(tmp_path, monkeypatch):
    """A file of a momentum training (version 2): its velocity entries and __meta__ must agree,
    with the parameters' shapes, finite; what is wrong is named."""
    use_backend("double", monkeypatch)
    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "train", 40)
    m = runtime.load("cnn", seed=4)
    m.train(x, y, epochs=1, batch_size=20, threads=1, progress=False, momentum=0.5)
    good = tmp_path / "v.npz"
    m.save(good)
    params, meta = load_weights(good, "cnn")
    assert meta["version"] == 2 and meta["momentum"] == 0.5
    assert meta["velocity"] == ["k1", "b1", "k2", "b2", "fc", "b"]
    assert set(params) == set(meta["velocity"])  # velocities are not parameters
    raw = good.read_bytes()
    vel = m.velocity

    def damaged(name, drop=(), replace=None):
        path = tmp_path / f"{name}.npz"
        path.write_bytes(raw)
        _rewrite(path, drop, replace)
        return path

    meta_with = lambda **kv: {"__meta__": _npy(np.array(json.dumps({**meta, **kv})))}
    for path, message in [
        (damaged("no-entry", drop=("velocity/fc",)),
         r"velocity entries for \['b', 'b1', 'b2', 'k1', 'k2'\] do not match __meta__'s list"),
        (damaged("unlisted", replace=meta_with(velocity=["k1", "b1", "k2", "b2", "fc"])),
         r"velocity entries for .* do not match __meta__'s list \['k1', 'b1', 'k2', 'b2', 'fc'\]"),
        (damaged("no-list", replace=meta_with(velocity=None)),
         r"__meta__ of a version-2 file has no valid 'velocity' list"),
        (damaged("shape", replace={"velocity/b": _npy(np.zeros(3, np.float32))}),
         r"the velocity of 'b' has shape \(3,\), expected \(10,\)"),
        (damaged("nan", replace={"velocity/b": _npy(np.full(10, np.nan, np.float32))}),
         r"the velocity of 'b' holds NaN or inf"),
        (damaged("mu", replace=meta_with(momentum=1.5)),
         r"__meta__'s momentum is 1.5, expected a number in \(0, 1\)"),
        (damaged("v3", replace=meta_with(version=3)),
         r"__meta__ of a version-3 file has no 'optimizer' record"),
        (damaged("v4", replace=meta_with(version=4)),
         r"weights format version 4 not supported \(known: 1, 2, 3\)"),
    ]:
        with pytest.raises(ValueError, match=rf"{path}: {message}"):
            runtime.load("cnn", weights=path)
    # a velocity the model cannot take (here for a parameter it lacks): named with the file
    listed = damaged("less", drop=("velocity/fc",), replace=meta_with(
        velocity=["k1", "b1", "k2", "b2", "b"]))
    with pytest.raises(ValueError, match=rf"{listed}: a velocity has an array per trained "):
        runtime.load("cnn", weights=listed)
    wrong = damaged("wrong", replace={"velocity/b": _npy(np.full(10, 1e300))})  # f64, too big
    with pytest.raises(ValueError, match=rf"{wrong}: the velocity of b must be finite "
                                         rf"floating point, found values too large for f32"):
        runtime.load("cnn", weights=wrong)
    # a version-1 reader's view: without the velocity entries and list, the file is version 1
    old = damaged("v1", drop=tuple(f"velocity/{n}" for n in vel),
                  replace={"__meta__": _npy(np.array(json.dumps(
                      {k: v for k, v in {**meta, "version": 1}.items()
                       if k not in ("velocity", "momentum")})))})
    assert runtime.load("cnn", weights=old).velocity is None
    # save_weights refuses a velocity it could not read back
    p = m.get_params()
    for kw, message in [
        (dict(velocity={**vel, "b": vel["b"][:3]}, momentum=0.5), r"velocity of b must have"),
        (dict(velocity={**vel, "b": vel["b"] * np.nan}, momentum=0.5), r"velocity of b holds"),
        (dict(velocity=vel, momentum=1.0), r"momentum in \(0, 1\)"),
        (dict(velocity={"b": vel["b"]}, momentum=0.5), r"an array per trained parameter"),
        (dict(momentum=0.5), r"momentum is saved with a velocity"),
    ]:
        with pytest.raises(ValueError, match=message):
            save_weights(tmp_path / "never.npz", p, m.spec, "f32", **kw)
    assert not (tmp_path / "never.npz").exists()


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask,want", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, monkeypatch, capsys, umask, mask, want):
    use_backend("double", monkeypatch)
    umask(mask)
    m = runtime.load("cnn")
    m.save(tmp_path / "direct.npz")
    assert _mode(tmp_path / "direct.npz") == want
    out = tmp_path / "run"
    assert main(["train", "cnn", "--epochs", "1", "--train-limit", "40", "--test-limit", "20",
                 "--batch-size", "20", "--threads", "1", "--out", str(out),
                 "--no-progress"]) == 0
    capsys.readouterr()
    names = sorted(p.name for p in out.iterdir())
    assert names == ["curves.png", "history.json", "weights.npz"]  # no temporary file left
    for name in names:
        assert _mode(out / name) == want, name


def test_a_plain_npz_of_the_params_loads_as_a_dict_does(tmp_path, monkeypatch):
    """``numpy.savez`` of every parameter (weights from elsewhere): ``runtime.load`` reads it
    as it reads a dict; ``load_weights``, the reader of the format, still says it is none; a
    name or shape the model does not have is named with the file."""
    use_backend("double", monkeypatch)
    m = runtime.load("cnn", init="random", seed=2)
    np.savez(tmp_path / "plain.npz", **m.params)
    m2 = runtime.load("cnn", weights=tmp_path / "plain.npz")
    for n in m.params:
        assert m2.params[n].tobytes() == m.params[n].tobytes()
    with pytest.raises(ValueError, match=r"plain\.npz: not a weights file \(no __meta__ entry: "
                                         r"Model\.save .* runtime\.load reads a plain \.npz"):
        load_weights(tmp_path / "plain.npz")
    np.savez(tmp_path / "short.npz", **{n: a for n, a in m.params.items() if n != "fc"})
    with pytest.raises(ValueError, match=r"short\.npz \(an \.npz without __meta__, read as one "
                                         r"array per parameter and const by name\): expected "
                                         r"parameters"):
        runtime.load("cnn", weights=tmp_path / "short.npz")
    np.savez(tmp_path / "flat.npz", **{**m.params, "fc": m.params["fc"].reshape(10, 192)})
    with pytest.raises(ValueError, match=r"flat\.npz .*: parameter fc must have shape"):
        runtime.load("cnn", weights=tmp_path / "flat.npz")
    np.savez(tmp_path / "obj.npz", **m.params, extra=np.array([{}], dtype=object))
    with pytest.raises(ValueError, match=r"obj\.npz: array 'extra' holds Python objects"):
        runtime.load("cnn", weights=tmp_path / "obj.npz")

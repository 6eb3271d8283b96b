"""Sizes before memory (runtime/sizes.py): a file that declares more than may be read, or that
inflates beyond the ratio bound, is refused before it is allocated, in one line.

The measure is the peak of Python's and NumPy's allocations while the reader runs
(``tracemalloc``: NumPy reports its array buffers to it), asserted under 100 MB; the time is
printed (``-s`` shows it), never asserted.
"""
from __future__ import annotations

import gzip
import io
import os
import struct
import subprocess
import sys
import time
import tracemalloc
import zipfile

import pytest
from pathlib import Path

import numpy as np

from runtime import sizes
from runtime.data import load_split
from runtime.idx import read_idx
from runtime.weights import read_weights

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
GIB = 1 << 30


def _measured(fn):
    """(the exception fn raised, peak bytes allocated, seconds)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        fn()
    except Exception as e:      # noqa: BLE001 (what it raised is the result)
        err = e
    else:
        err = None
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return err, peak, seconds


def _npy_header(shape, dtype="<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False,
                                               "shape": tuple(shape)})
    return buf.getvalue()


def claiming_npz(path: Path, gib: int = 29) -> Path:
    """A small .npz whose x_train header claims ``gib`` GiB of float32 (issue #38: 938 bytes,
    29 GiB)."""
    n = gib * GIB // 4
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("x_train.npy", _npy_header((n,)) + b"\0" * 512)
        z.writestr("y_train.npy", _npy_header((n,), "<i8") + b"\0" * 64)
    return path


def zeros_gz(path: Path, header: bytes, nbytes: int) -> Path:
    """A gzip file of ``header`` then ``nbytes`` zeros, compressed in pieces (never whole in
    memory)."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(header)
        block = b"\0" * MB
        for _ in range(nbytes // MB):
            f.write(block)
        f.write(b"\0" * (nbytes % MB))
    return path


def test_npz_claiming_29_gib_is_refused_before_allocating(tmp_path):
    path = claiming_npz(tmp_path / "claim.npz")
    err, peak, seconds = _measured(lambda: load_split(path, "train"))
    print(f"\n29 GiB claim ({path.stat().st_size} bytes): refused in {seconds * 1e3:.1f} ms, "
          f"peak {peak / MB:.2f} MB")
    assert isinstance(err, sizes.DataLimitError), repr(err)
    assert "x_train" in str(err) and "\n" not in str(err)
    assert peak < 100 * MB


def test_npz_bomb_is_refused_by_its_ratio(tmp_path):
    """An .npz of zeros that inflates about 1000 times: refused from the zip's headers."""
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, x_train=np.zeros((64 * MB // 4,), np.float32),
                        y_train=np.zeros(3, np.int64))
    err, peak, seconds = _measured(lambda: load_split(path, "train"))
    print(f"\nnpz bomb ({path.stat().st_size} bytes -> 64 MiB): refused in "
          f"{seconds * 1e3:.1f} ms, peak {peak / MB:.2f} MB")
    assert isinstance(err, sizes.DataLimitError) and "zip bomb" in str(err), repr(err)
    assert peak < 100 * MB


def test_gzip_bomb_idx_is_refused_while_inflating(tmp_path):
    """An IDX.gz of 256 MiB of zeros (its header honest, under the limit): inflating stops at
    the ratio bound, a few MB in."""
    shape = (256 * MB // 784, 28, 28)
    header = bytes([0, 0, 0x08, 3]) + struct.pack(">3I", *shape)
    path = zeros_gz(tmp_path / "train-images-idx3-ubyte.gz", header, shape[0] * 784)
    err, peak, seconds = _measured(lambda: read_idx(path))
    print(f"\ngzip bomb ({path.stat().st_size} bytes -> 256 MiB): refused in "
          f"{seconds * 1e3:.1f} ms, peak {peak / MB:.2f} MB")
    assert isinstance(err, sizes.DataLimitError) and "gzip bomb" in str(err), repr(err)
    assert peak < 100 * MB


def test_gzip_idx_declaring_more_than_the_limit_is_refused_at_its_header(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv(sizes.ENV_MAX_BYTES, "10M")
    header = bytes([0, 0, 0x08, 3]) + struct.pack(">3I", 60000, 28, 28)     # 47 MB
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(header + b"\1" * 100))
    err, peak, _ = _measured(lambda: read_idx(path))
    assert isinstance(err, sizes.DataLimitError) and "header declares" in str(err), repr(err)
    assert peak < 100 * MB


def test_weights_of_the_wrong_shape_are_refused_before_reading(tmp_path):
    """A 2 MB weights .npz whose array inflates to 2 GB: refused by the model's shape (and
    the ratio) before anything is inflated."""
    path = tmp_path / "w.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        meta = io.BytesIO()
        np.save(meta, np.array('{"format": "proved-kernels-weights", "version": 1}'))
        z.writestr("__meta__.npy", meta.getvalue())
        with z.open("w1.npy", "w", force_zip64=True) as f:
            f.write(_npy_header((512 * MB // 4,)))
            block = b"\0" * MB
            for _ in range(512):
                f.write(block)
    err, peak, seconds = _measured(lambda: read_weights(path, "mlp", {"w1": (128, 784)}))
    print(f"\nweights bomb ({path.stat().st_size} bytes -> 512 MiB): refused in "
          f"{seconds * 1e3:.1f} ms, peak {peak / MB:.2f} MB")
    assert isinstance(err, sizes.DataLimitError), repr(err)
    assert peak < 100 * MB


def test_a_plain_npy_claiming_more_than_it_holds_is_refused(tmp_path):
    path = tmp_path / "w.npy"
    path.write_bytes(_npy_header((GIB,)) + b"\0" * 16)
    err, peak, _ = _measured(lambda: sizes.check_npy_or_npz(path))
    assert isinstance(err, sizes.DataLimitError), repr(err)
    assert peak < 100 * MB


def test_honest_files_still_load(tmp_path):
    p = tmp_path / "d.npz"
    x = np.random.default_rng(0).random((50, 4)).astype(np.float32)
    np.savez_compressed(p, x_train=x, y_train=np.arange(50) % 2)
    got, y = load_split(p, "train")
    assert (got == x).all() and y.tolist() == (np.arange(50) % 2).tolist()
    from runtime.idx import write_idx
    a = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    write_idx(tmp_path / "a.gz", a)
    assert (read_idx(tmp_path / "a.gz") == a).all()


def test_the_command_line_says_it_in_one_line(tmp_path):
    """``python -m runtime train MODEL --data FILE`` with the 29 GiB claim: one line, exit 2."""
    path = claiming_npz(tmp_path / "claim.npz")
    model = tmp_path / "tiny.model"
    model.write_text("model tiny\ninput  x : 4\ntarget y : 2\nparam  w : 2x4\nparam  b : 2\n"
                     "output out = dense(w, x, b)\nloss loss = sqerr(out, y)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run([sys.executable, "-m", "runtime", "train", str(model), "--data",
                          str(path), "--epochs", "1", "--out", str(tmp_path / "out"),
                          "--no-progress"], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and res.stderr.strip().count("\n") == 0, res.stderr
    assert "x_train" in res.stderr and "limit" in res.stderr


BIG = ("model big\ninput  x : 4\ntarget y : 2\nparam  w : 300x4\nparam  b : 300\n"
       "param  v : 2x300\nparam  c : 2\nwide = dense(w, x, b)\n"
       "output out = dense(v, wide, c)\nloss loss = sqerr(out, y)\n")


def _needs(model) -> tuple[int, int]:
    """(the batch kernels' buffers on every core, the one-sample path's), in bytes."""
    k = model._k
    one = 2 * k.ffi.sizeof(k.type("params")) + k.ffi.sizeof(k.type("values")) + \
        k.ffi.sizeof(k.type("inputs"))
    return int(k.fn("workspace_size")(os.cpu_count() or 1)), one


def test_buffers_beyond_the_memory_available_are_refused_at_load(tmp_path, monkeypatch):
    """The kernels' buffers are computed at load (``M_workspace_size`` on every core, and the
    one-sample path's): when even the one-sample path passes the memory available, the model
    is refused in one line, naming the largest bindings."""
    import runtime
    model = tmp_path / "big.model"
    model.write_text(BIG)
    batch, one = _needs(runtime.load(str(model)))     # with the machine's memory it loads
    monkeypatch.setattr(sizes, "_available", lambda: one - 1)
    err, peak, _ = _measured(lambda: runtime.load(str(model)))
    assert isinstance(err, sizes.DataLimitError), repr(err)
    assert "gradient d_w" in str(err) and "\n" not in str(err), str(err)
    assert "one sample at a time" in str(err), str(err)


def test_past_the_batch_buffers_a_model_predicts_one_sample_at_a_time(tmp_path, monkeypatch):
    """Between the two (VGG-19's training buffers on a small machine): the model loads with an
    ``InferenceOnlyWarning`` saying what is refused and why; training and gradients raise the
    one-line ``DataLimitError`` naming the largest bindings; ``predict`` and ``run`` give the
    batch kernels' predictions through ``M_forward``, one sample at a time."""
    import warnings
    import runtime
    model = tmp_path / "big.model"
    model.write_text(BIG)
    m = runtime.load(str(model), seed=3)
    batch, one = _needs(m)
    assert one < batch
    x = np.random.default_rng(0).normal(size=(37, 4)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 2, size=37)
    want, want_run = m.predict(x), m.run({"x": x})
    monkeypatch.setattr(sizes, "_available", lambda: (one + batch) // 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        small = runtime.load(str(model), seed=3)
    (w,) = [c for c in caught if issubclass(c.category, runtime.InferenceOnlyWarning)]
    assert "training on as many threads is refused" in str(w.message)
    assert "the largest: gradient d_w (4.7 KiB), gradient d_v (2.3 KiB)" in str(w.message)
    for train in (lambda: small.train(x, y, epochs=1, batch_size=10),
                  lambda: small.gradients(x[:10], y[:10]), lambda: small.mean_loss(x, y)):
        with pytest.raises(sizes.DataLimitError, match=r"buffers for \d+ thread.*gradient d_w"):
            train()
    got = small.predict(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.isfinite(got).all() and not (got == 0).all()
    np.testing.assert_allclose(small.run({"x": x}), want_run, rtol=1e-5, atol=1e-6)
    assert small.evaluate(x, y) == m.evaluate(x, y)


def test_a_plain_zip_entry_counts_against_the_limit(tmp_path, monkeypatch):
    """An entry that is not an .npy (numpy reads it whole, as bytes) is sized like the arrays."""
    import zipfile
    from runtime import sizes
    path = tmp_path / "plain.npz"
    with zipfile.ZipFile(path, "w") as z:      # stored: no ratio to catch it
        z.writestr("x_train", b"\0" * 5_000_000)
    monkeypatch.setenv(sizes.ENV_MAX_BYTES, "1000000")
    with pytest.raises(sizes.DataLimitError, match="x_train"):
        sizes.npz_members(path)


def test_concatenated_gzip_members_inflate_whole(tmp_path):
    """cat a.gz b.gz (or bgzip): every member, as gzip.decompress reads it."""
    import gzip
    from runtime import sizes
    rng = np.random.default_rng(0)
    a, b = rng.bytes(100_000), rng.bytes(150_000)
    raw = gzip.compress(a) + gzip.compress(b)
    assert sizes.inflate(raw, tmp_path / "two.gz") == a + b

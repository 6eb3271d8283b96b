"""IDX reader and writer (runtime/idx.py): round trips and clear errors on bad files."""

import gzip
import struct

import numpy as np
import pytest

from runtime.idx import IdxError, find_mnist_files, load_mnist, read_idx, write_idx


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64]
)
def test_round_trip(tmp_path, suffix, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 4, 5)) * 50).astype(dtype)
    path = tmp_path / f"a-idx3{suffix}"
    write_idx(path, a)
    b = read_idx(path)
    assert b.dtype == np.dtype(dtype) and b.shape == a.shape
    np.testing.assert_array_equal(a, b)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == (suffix == ".gz")


def test_header_layout_is_big_endian(tmp_path):
    path = tmp_path / "x"
    write_idx(path, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16))
    raw = path.read_bytes()
    assert raw[:4] == bytes([0, 0, 0x0B, 2])
    assert struct.unpack(">II", raw[4:12]) == (2, 3)
    assert struct.unpack(">6h", raw[12:]) == (1, 2, 3, 4, 5, 6)


def test_gzip_output_is_deterministic(tmp_path):
    a = np.arange(100, dtype=np.uint8)
    write_idx(tmp_path / "a.gz", a)
    write_idx(tmp_path / "b.gz", a)
    assert (tmp_path / "a.gz").read_bytes() == (tmp_path / "b.gz").read_bytes()


def _raw(tmp_path, data: bytes, gz=False):
    path = tmp_path / ("f.gz" if gz else "f")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_bad_magic(tmp_path):
    path = _raw(tmp_path, bytes([1, 0, 8, 1]) + struct.pack(">I", 1) + b"\x00")
    with pytest.raises(IdxError, match="magic"):
        read_idx(path)


def test_unknown_type_byte(tmp_path):
    path = _raw(tmp_path, bytes([0, 0, 0x42, 1]) + struct.pack(">I", 1) + b"\x00")
    with pytest.raises(IdxError, match="type byte 0x42"):
        read_idx(path)


def test_wrong_expected_dtype(tmp_path):
    write_idx(tmp_path / "f", np.zeros(3, dtype=np.float32))
    with pytest.raises(IdxError, match="expected uint8"):
        read_idx(tmp_path / "f", np.uint8)


@pytest.mark.parametrize("gz", [False, True])
def test_truncated_data(tmp_path, gz):
    data = bytes([0, 0, 8, 2]) + struct.pack(">II", 3, 4) + bytes(11)
    with pytest.raises(IdxError, match="truncated.*needs 12 data bytes, file has 11"):
        read_idx(_raw(tmp_path, data, gz))


def test_truncated_header(tmp_path):
    with pytest.raises(IdxError, match="truncated"):
        read_idx(_raw(tmp_path, bytes([0, 0, 8, 3]) + struct.pack(">I", 3)))
    with pytest.raises(IdxError, match="truncated"):
        read_idx(_raw(tmp_path, b"\x00\x00"))


def test_truncated_gzip_stream(tmp_path):
    write_idx(tmp_path / "a.gz", np.arange(1000, dtype=np.int32))
    raw = (tmp_path / "a.gz").read_bytes()
    (tmp_path / "b.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(IdxError, match="truncated gzip"):
        read_idx(tmp_path / "b.gz")


def test_trailing_bytes(tmp_path):
    data = bytes([0, 0, 8, 1]) + struct.pack(">I", 2) + bytes(3)
    with pytest.raises(IdxError, match="1 unexpected bytes"):
        read_idx(_raw(tmp_path, data))


def _mnist_dir(tmp_path, n_img, n_lab, names=("train-images-idx3-ubyte.gz",
                                              "train-labels-idx1-ubyte.gz"), label_max=9):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (n_img, 28, 28), dtype=np.uint8)
    labels = (np.arange(n_lab) % (label_max + 1)).astype(np.uint8)
    write_idx(tmp_path / names[0], images)
    write_idx(tmp_path / names[1], labels)
    return images, labels


@pytest.mark.parametrize(
    "names",
    [
        ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
        ("train-images.idx3-ubyte", "train-labels.idx1-ubyte"),
    ],
)
def test_load_mnist_scales_and_finds_both_namings(tmp_path, names):
    images, labels = _mnist_dir(tmp_path, 5, 5, names)
    x, y = load_mnist(tmp_path, "train")
    assert x.dtype == np.float32 and x.shape == (5, 28, 28)
    np.testing.assert_array_equal(x * 255, images.astype(np.float32))
    np.testing.assert_array_equal(y, labels)
    assert y.dtype == np.int64
    x2, y2 = load_mnist(tmp_path, "train", limit=2)
    assert len(x2) == len(y2) == 2


def test_load_mnist_mismatched_counts(tmp_path):
    _mnist_dir(tmp_path, 5, 4)
    with pytest.raises(IdxError, match="5 images but .* 4 labels"):
        load_mnist(tmp_path, "train")


def test_load_mnist_label_out_of_range(tmp_path):
    _mnist_dir(tmp_path, 12, 12, label_max=11)
    with pytest.raises(IdxError, match="outside 0..9"):
        load_mnist(tmp_path, "train")


def test_load_mnist_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no MNIST test images"):
        find_mnist_files(tmp_path, "test")
    with pytest.raises(FileNotFoundError):
        load_mnist(tmp_path / "nowhere", "train")

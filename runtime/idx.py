"""Read and write IDX files (the MNIST container format), plain or gzip-compressed.

An IDX file is: two zero bytes, one type byte, one byte giving the number of dimensions d,
then d big-endian uint32 sizes, then the elements in row-major order (big-endian).

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "x-idx1-ubyte.gz")
>>> write_idx(p, np.arange(3, dtype=np.uint8))
>>> read_idx(p).tolist()
[0, 1, 2]

``load_mnist(directory, "train")`` finds the two MNIST files of a split in a directory under
either common naming (``train-images-idx3-ubyte[.gz]`` or ``train-images.idx3-ubyte[.gz]``)
and returns float32 images in [0, 1] with shape (N, 28, 28) and int64 labels with shape (N,).
"""

from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = ["IdxError", "read_idx", "write_idx", "load_mnist", "find_mnist_files"]

# IDX type byte -> big-endian NumPy dtype
_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {dt.newbyteorder("="): code for code, dt in _DTYPES.items()}
_GZIP_MAGIC = b"\x1f\x8b"


class IdxError(ValueError):
    """A file is not a well-formed IDX file (or not the one that was expected)."""


def _declared(head: bytes) -> int | None:
    """The bytes an IDX file of this header holds (None: not an IDX header; read_idx says)."""
    if len(head) < 4 or head[0] or head[1] or head[2] not in _DTYPES:
        return None
    ndim = head[3]
    if len(head) < 4 + 4 * ndim:
        return None
    shape = struct.unpack(f">{ndim}I", head[4:4 + 4 * ndim])
    return 4 + 4 * ndim + math.prod(shape) * _DTYPES[head[2]].itemsize


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, inflated if it is gzip: what its header declares is checked against
    the limit before it is read or inflated, and the inflation against the ratio bound (a
    gzip bomb: runtime/sizes.py)."""
    from .sizes import _limit_error, inflate, max_bytes
    limit = max_bytes()
    with open(path, "rb") as f:
        head = f.read(4 + 4 * 255)
        size = os.fstat(f.fileno()).st_size
        if head[:2] != _GZIP_MAGIC:
            declared = _declared(head)
            if declared is not None and declared > limit:
                raise _limit_error(path, "its data (as its header declares)", declared, limit)
            if size > limit:
                raise _limit_error(path, "reading it", size, limit)
            f.seek(0)
            return f.read()
        if size > limit:
            raise _limit_error(path, "reading it", size, limit)
        f.seek(0)
        raw = f.read()
    try:
        return inflate(raw, path, limit, head=4 + 4 * 255, need=_declared)
    except EOFError as e:
        raise IdxError(f"{path}: truncated gzip stream ({e})") from None
    except (OSError, zlib.error) as e:
        raise IdxError(f"{path}: corrupt gzip stream ({e})") from None


def read_idx(path: str | os.PathLike, dtype: np.dtype | str | None = None) -> np.ndarray:
    """Read one IDX file (gzip detected from its content) into a native-endian array.

    If ``dtype`` is given, the file's element type must be exactly that type.
    Raises ``IdxError`` (a ``ValueError``) naming the file and the problem.
    """
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise IdxError(f"{path}: truncated: {len(raw)} bytes, too short for an IDX header")
    if raw[0] != 0 or raw[1] != 0:
        raise IdxError(
            f"{path}: bad magic number 0x{raw[:4].hex()}: an IDX file starts with two zero bytes"
        )
    code, ndim = raw[2], raw[3]
    if code not in _DTYPES:
        raise IdxError(f"{path}: unknown IDX type byte 0x{code:02x}")
    file_dtype = _DTYPES[code]
    if dtype is not None and np.dtype(dtype) != file_dtype.newbyteorder("="):
        raise IdxError(
            f"{path}: element type is {file_dtype.newbyteorder('=').name} (type byte "
            f"0x{code:02x}), expected {np.dtype(dtype).name}"
        )
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IdxError(f"{path}: truncated: header needs {header} bytes, file has {len(raw)}")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    nbytes = int(np.prod(shape, dtype=np.int64)) * file_dtype.itemsize
    have = len(raw) - header
    if have < nbytes:
        raise IdxError(
            f"{path}: truncated: shape {shape} needs {nbytes} data bytes, file has {have}"
        )
    if have > nbytes:
        raise IdxError(f"{path}: {have - nbytes} unexpected bytes after the data of shape {shape}")
    data = np.frombuffer(raw, dtype=file_dtype, count=nbytes // file_dtype.itemsize, offset=header)
    return data.reshape(shape).astype(file_dtype.newbyteorder("="))


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file, gzip-compressed (deterministically) if ``path`` ends
    in .gz."""
    array = np.asarray(array)
    native = array.dtype.newbyteorder("=")
    if native not in _CODES:
        raise IdxError(f"IDX cannot store dtype {array.dtype}")
    if array.ndim > 255:
        raise IdxError("IDX stores at most 255 dimensions")
    code = _CODES[native]
    payload = (
        bytes([0, 0, code, array.ndim])
        + struct.pack(f">{array.ndim}I", *array.shape)
        + np.ascontiguousarray(array, dtype=_DTYPES[code]).tobytes()
    )
    path = Path(path)
    with open(path, "wb") as f:
        if path.suffix == ".gz":
            # mtime=0 and no file name: the same array always gives the same bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as g:
                g.write(payload)
        else:
            f.write(payload)


_SPLITS = {"train": "train", "test": "t10k"}


def find_mnist_files(directory: str | os.PathLike, split: str) -> tuple[Path, Path]:
    """Return the (images, labels) files of ``split`` ("train" or "test") in ``directory``."""
    if split not in _SPLITS:
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"MNIST directory {directory} does not exist")
    stem = _SPLITS[split]
    found = []
    for kind, d in (("images", 3), ("labels", 1)):
        names = [
            f"{stem}-{kind}-idx{d}-ubyte{ext}" if sep == "-" else f"{stem}-{kind}.idx{d}-ubyte{ext}"
            for sep in ("-", ".")
            for ext in (".gz", "")
        ]
        for name in names:
            if (directory / name).is_file():
                found.append(directory / name)
                break
        else:
            raise FileNotFoundError(
                f"no MNIST {split} {kind} file in {directory} (looked for {', '.join(names)})"
            )
    return found[0], found[1]


def load_mnist(
    directory: str | os.PathLike, split: str = "train", limit: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Load an MNIST split: float32 images in [0, 1] of shape (N, 28, 28), int64 labels (N,).

    ``limit`` keeps the first ``limit`` records.
    """
    img_path, lab_path = find_mnist_files(directory, split)
    images = read_idx(img_path, np.uint8)
    labels = read_idx(lab_path, np.uint8)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise IdxError(f"{img_path}: expected images of shape (N, 28, 28), got {images.shape}")
    if labels.ndim != 1:
        raise IdxError(f"{lab_path}: expected labels of shape (N,), got {labels.shape}")
    if images.shape[0] != labels.shape[0]:
        raise IdxError(
            f"{img_path} has {images.shape[0]} images but {lab_path} has "
            f"{labels.shape[0]} labels"
        )
    if labels.size and labels.max() > 9:
        raise IdxError(f"{lab_path}: label {int(labels.max())} is outside 0..9")
    if limit is not None:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        images, labels = images[:limit], labels[:limit]
    return (images.astype(np.float32) / np.float32(255.0)), labels.astype(np.int64)

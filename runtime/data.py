"""Training and test data from a directory of MNIST IDX files or from one ``.npz`` file.

A model of your own rarely reads 28×28 images, so the command line also takes a NumPy archive
with the arrays ``x_train``, ``y_train`` and optionally ``x_test``, ``y_test`` (the names Keras
uses). Features are kept as they are if they are float32 or float64, uint8 pixels are scaled to
[0, 1] as the IDX reader does; labels are integers (classes), or floats of shape (N, ...): the
targets themselves, for a regression.

>>> import numpy as np, tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "d.npz")
>>> np.savez(p, x_train=np.zeros((3, 20), np.float32), y_train=np.array([0, 1, 1]))
>>> x, y = load_split(p, "train")
>>> x.shape, y.tolist(), has_split(p, "test")
((3, 20), [0, 1, 1], False)
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from .idx import find_mnist_files, load_mnist

__all__ = ["DataError", "load_split", "has_split"]


class DataError(ValueError):
    """A data file is missing an array, or holds one of the wrong kind."""


def _is_npz(path: Path) -> bool:
    return path.suffix == ".npz" or path.is_file()


def _open_npz(path: Path):
    if not path.is_file():
        raise FileNotFoundError(f"data file {path} does not exist")
    with open(path, "rb") as f:
        head = f.read(6)
    if not head.startswith((b"PK", b"\x93NUMPY")):  # numpy would call it pickled data
        raise DataError(f"{path}: not a NumPy .npz archive (it begins {head!r}, an .npz is a "
                        f"zip archive of x_train, y_train, ...: numpy.savez writes one)")
    if head.startswith(b"\x93NUMPY"):    # never loaded: it could declare any size
        raise DataError(f"{path}: a single array (.npy), not an .npz archive of x_train, "
                        f"y_train, ... (numpy.savez writes one)")
    from .sizes import DataLimitError, npz_members
    try:
        npz_members(path)       # the declared sizes, before any is allocated (runtime/sizes.py)
        z = np.load(path, allow_pickle=False)
    except DataLimitError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise DataError(f"{path}: not a NumPy .npz archive ({e})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):  # a .npy: one array, no names
        raise DataError(f"{path}: a single array (.npy), not an .npz archive of x_train, "
                        f"y_train, ... (numpy.savez writes one)")
    return z


def _array(z, path: Path, key: str) -> np.ndarray:
    try:
        return z[key]
    except ValueError as e:  # object arrays need pickles, which are never loaded
        raise DataError(f"{path}: {key}: {e}") from None


def has_split(path: str | os.PathLike, split: str) -> bool:
    """Whether ``path`` (an MNIST directory or an ``.npz``) holds the split ``split``."""
    path = Path(path)
    if _is_npz(path):
        with _open_npz(path) as z:
            return f"x_{split}" in z.files
    try:
        find_mnist_files(path, split)
        return True
    except FileNotFoundError:
        return False


def load_split(
    path: str | os.PathLike, split: str = "train", limit: int | None = None,
    labels: bool = True,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Features and labels of ``split`` ("train" or "test"): integer classes, or float targets
from an ``.npz``; the first ``limit`` if given.

    ``path`` is an MNIST IDX directory (``runtime.load_mnist``) or an ``.npz`` file. With
    ``labels=False`` an ``.npz`` may leave out ``y_<split>`` (data to predict): the labels are
    then None.
    """
    path = Path(path)
    if not _is_npz(path):
        return load_mnist(path, split, limit)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, not {limit}")
    with _open_npz(path) as z:
        keys = [f"x_{split}"] + ([f"y_{split}"] if labels or f"y_{split}" in z.files else [])
        for key in keys:
            if key not in z.files:
                raise DataError(f"{path}: no array {key} (it has {', '.join(sorted(z.files))})")
        x = _array(z, path, f"x_{split}")
        y = _array(z, path, f"y_{split}") if len(keys) == 2 else None
    if x.dtype == np.uint8:
        x = x.astype(np.float32) / np.float32(255.0)
    elif x.dtype not in (np.float32, np.float64):
        raise DataError(f"{path}: x_{split} must be float32, float64 or uint8 pixels, "
                        f"not {x.dtype}")
    if y is None:
        if x.ndim < 1:
            raise DataError(f"{path}: x_{split} has shape {x.shape}; expected (N, ...)")
        return (x if limit is None else x[:limit]), None
    if y.dtype.kind not in "uif":
        raise DataError(f"{path}: y_{split} must hold integer labels or float32/float64 "
                        f"targets, not {y.dtype}")
    if y.dtype.kind == "f":  # the targets themselves (a regression), one row per sample
        if x.ndim < 1 or y.ndim < 1 or len(x) != len(y):
            raise DataError(f"{path}: x_{split} has shape {x.shape} and y_{split} {y.shape}; "
                            "expected (N, ...) and (N, ...)")
    elif x.ndim < 1 or y.ndim != 1 or len(x) != len(y):
        raise DataError(f"{path}: x_{split} has shape {x.shape} and y_{split} {y.shape}; "
                        "expected (N, ...) and (N,)")
    if limit is not None:
        x, y = x[:limit], y[:limit]
    return x, (y if y.dtype.kind == "f" else y.astype(np.int64))

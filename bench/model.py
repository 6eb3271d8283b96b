"""The benchmark's common view of the CNN: parameter layout, initial weights, data.

Every implementation exchanges the same flat float32 buffers, laid out as the generated C
structs (docs/generated-api.md, dump context order):

* parameters (and gradients): one vector of ``N_PARAMS`` floats, ``k1 b1 k2 b2 fc b`` in that
  order, each row-major in its dump shape;
* a batch of samples: an ``(n, N_INPUTS)`` array whose row is ``target[10]`` then ``inp[784]``
  (the layout of ``cnn_inputs``).

>>> w = init_params()
>>> w.shape, bool(unflatten(w)["k2"][0, 0, 0, 0] == np.float32(1 / 150))
((3898,), True)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runtime.spec import model_spec
from runtime.weights import sac_constants

# name, shape (the dump's shape tree flattened to its leaves), initial value (paper §4);
# read from the CNN's dump, as the trainer does, so that the two cannot disagree
_CNN = model_spec("cnn")
_SAC = sac_constants(_CNN)
PARAM_SPEC: tuple[tuple[str, tuple[int, ...], float], ...] = tuple(
    (name, shape, _SAC[name]) for name, shape in _CNN.param_shapes.items()
)
N_PARAMS = sum(int(np.prod(s)) for _, s, _ in PARAM_SPEC)
N_OUT = 10
N_INPUTS = N_OUT + 28 * 28
LEARNING_RATE = 0.05
BATCH = 100

REPO = Path(__file__).resolve().parent.parent


def param_slices() -> dict[str, slice]:
    """Where each parameter lives in the flat vector."""
    out, at = {}, 0
    for name, shape, _ in PARAM_SPEC:
        n = int(np.prod(shape))
        out[name] = slice(at, at + n)
        at += n
    return out


def init_params() -> np.ndarray:
    """The paper's initial weights: every parameter array constant (1/fan-in style values)."""
    w = np.empty(N_PARAMS, dtype=np.float32)
    for (name, _, value), sl in zip(PARAM_SPEC, param_slices().values()):
        w[sl] = np.float32(value)
    return w


def jittered_params(seed: int = 0, scale: float = 0.2) -> np.ndarray:
    """Initial weights times (1 + scale * N(0, 1)): breaks the symmetry of the constant init,
    so an agreement check cannot pass by accident (e.g. with two channels swapped)."""
    rng = np.random.default_rng(seed)
    w = init_params()
    return (w * (1 + scale * rng.standard_normal(N_PARAMS))).astype(np.float32)


def unflatten(w: np.ndarray) -> dict[str, np.ndarray]:
    """Views of the flat vector, one per parameter, in its dump shape."""
    return {name: w[sl].reshape(shape)
            for (name, shape, _), sl in zip(PARAM_SPEC, param_slices().values())}


def pack_inputs(images: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(n, 28, 28) float images and (n,) labels -> (n, N_INPUTS) rows of target ++ inp."""
    n = images.shape[0]
    xs = np.zeros((n, N_INPUTS), dtype=np.float32)
    xs[np.arange(n), labels] = 1.0
    xs[:, N_OUT:] = images.reshape(n, 28 * 28)
    return xs


def unpack_inputs(xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, N_INPUTS) -> images (n, 28, 28) and one-hot targets (n, 10), both float32 copies."""
    xs = np.asarray(xs, dtype=np.float32)
    return (np.ascontiguousarray(xs[:, N_OUT:]).reshape(-1, 28, 28),
            np.ascontiguousarray(xs[:, :N_OUT]))


@dataclass(frozen=True)
class Dataset:
    xs: np.ndarray          # (n, N_INPUTS) float32
    source: str             # where it came from, for the report


def data_dirs() -> list[Path]:
    """Where MNIST is looked for, in order: $BENCH_MNIST, the bundled subset, the shared copy."""
    dirs = [Path(os.environ["BENCH_MNIST"])] if os.environ.get("BENCH_MNIST") else []
    return dirs + [REPO / "data" / "mnist", REPO.parent / "shared" / "data" / "mnist",
                   Path("/work/shared/data/mnist")]


def synthetic(n: int, seed: int = 0) -> np.ndarray:
    """Random images in [0, 1] with random labels: the same amount of work as MNIST."""
    rng = np.random.default_rng(seed)
    images = rng.random((n, 28, 28), dtype=np.float32)
    return pack_inputs(images, rng.integers(0, 10, n))


def load_dataset(n: int, data_dir: str | None = None) -> Dataset:
    """The first ``n`` training images (MNIST if found, else synthetic data)."""
    from runtime.idx import load_mnist  # shared IDX reader (images scaled to [0, 1])

    for d in ([Path(data_dir)] if data_dir else data_dirs()):
        try:
            images, labels = load_mnist(d, "train", limit=n)
        except FileNotFoundError:
            if data_dir:
                raise
            continue
        if images.shape[0] < n:
            if data_dir:
                raise ValueError(f"{d} has only {images.shape[0]} training images, need {n}")
            continue
        return Dataset(pack_inputs(images, labels), f"mnist:{d}")
    return Dataset(synthetic(n), "synthetic")

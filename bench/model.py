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


class BenchModel:
    """Any model's view for the benchmark, read from its dump (``runtime.spec.model_spec``):
    the flat parameter vector (parameters in context order, each row-major), the ``(n,
    n_inputs)`` sample rows (the inputs in context order, the layout of ``M_inputs``), the
    paper-style constant initial weights (``runtime.weights`` "sac": 1/fan-in), and the
    FLOP counts of its dump (``bench.dumpflops``).

    ``model``: a built-in name, a dump (``.json``) or a model file (``.model``); ``dump``: the
    dump a built-in model's kernels are generated from instead of the built-in one."""

    def __init__(self, model, dump: str | None = None):
        import json

        from runtime.spec import model_spec
        from runtime.weights import init_params as runtime_init

        spec = model_spec(model, dump) if dump else model_spec(model)
        if not spec.has_data:
            raise ValueError(f"{spec.describe()} names no features and target: cannot benchmark")
        if spec.consts:
            raise ValueError(f"{spec.describe()} has consts ({', '.join(spec.consts)}), whose "
                             f"values the benchmark has no way to get: cannot benchmark")
        self.spec, self.name, self.source = spec, spec.name, str(model)
        self.dump = dump
        self.kernels_dump = str(spec.kernels_dump) if spec.kernels_dump else None
        consts = sac_constants(spec)
        self.param_spec = tuple((n, s, consts[n]) for n, s in spec.param_shapes.items())
        # Initial weights: the paper's constants (1/fan-in), except for a model with kinks
        # (relu, max): constant weights make every max a tie, where the subgradients of two
        # correct implementations may legitimately differ; those start from the runtime's
        # seeded random weights (uniform in +-1/sqrt(fan-in)).
        chain = json.dumps(spec.raw.get("chain", [])) if spec.raw else ""
        self.init = "random" if ('"relu"' in chain or '"max"' in chain) else "sac"
        self._init = np.concatenate([a.ravel() for a in runtime_init(spec, self.init).values()])
        self.n_params = sum(int(np.prod(s)) for _, s, _ in self.param_spec)
        self.input_spec = tuple(spec.input_shapes.items())
        self.n_inputs = sum(int(np.prod(s)) for _, s in self.input_spec)
        self.features, self.target = spec.features, spec.target
        self.n_classes = spec.n_classes
        self.n_out = int(np.prod(spec.output_shape))
        at, self.input_slices = 0, {}
        for n, s in self.input_spec:
            self.input_slices[n] = slice(at, at + int(np.prod(s)))
            at += int(np.prod(s))

    @property
    def dump_path(self) -> str:
        """The dump the generated C is built from."""
        if self.kernels_dump:
            return self.kernels_dump
        from extract.emit import build
        return str(build.dump_path(self.name, make=False))

    def flops(self):
        from bench.dumpflops import count_dump
        return count_dump(self.dump_path)

    def param_slices(self) -> dict[str, slice]:
        out, at = {}, 0
        for name, shape, _ in self.param_spec:
            n = int(np.prod(shape))
            out[name] = slice(at, at + n)
            at += n
        return out

    def init_params(self) -> np.ndarray:
        return self._init.astype(np.float32, copy=True)

    def jittered_params(self, seed: int = 0, scale: float = 0.2) -> np.ndarray:
        rng = np.random.default_rng(seed)
        w = self.init_params()
        return (w * (1 + scale * rng.standard_normal(self.n_params))).astype(np.float32)

    def unflatten(self, w: np.ndarray) -> dict[str, np.ndarray]:
        return {name: w[sl].reshape(shape)
                for (name, shape, _), sl in zip(self.param_spec, self.param_slices().values())}

    def pack_inputs(self, images: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """(n, ...) images (as many values as the features) and (n,) labels -> sample rows."""
        n = images.shape[0]
        xs = np.zeros((n, self.n_inputs), dtype=np.float32)
        fs, ts = self.input_slices[self.features], self.input_slices[self.target]
        xs[:, fs] = images.reshape(n, -1)
        xs[np.arange(n), ts.start + np.asarray(labels)] = 1.0
        return xs

    def unpack_inputs(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sample rows -> features (n, *feature shape) and one-hot targets (n, classes)."""
        xs = np.asarray(xs, dtype=np.float32)
        shape = dict(self.input_spec)[self.features]
        return (np.ascontiguousarray(xs[:, self.input_slices[self.features]])
                .reshape(-1, *shape),
                np.ascontiguousarray(xs[:, self.input_slices[self.target]]))


_MODELS: dict = {}


def bench_model(model, dump: str | None = None) -> BenchModel:
    """``BenchModel(model, dump)``, made once per process."""
    key = (str(model), dump)
    if key not in _MODELS:
        _MODELS[key] = BenchModel(model, dump)
    return _MODELS[key]


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
    """The first ``n`` training images (MNIST if found, else synthetic data), as CNN rows."""
    images, labels, source = load_images(n, data_dir)
    return Dataset(pack_inputs(images, labels), source)


def model_images(bm: "BenchModel", images: np.ndarray, labels: np.ndarray, source: str,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """The images for model ``bm``: ``images`` (MNIST's 28 x 28) where its features have as
    many values, else as many synthetic ones of its own feature shape (uniform in [0, 1), seeded;
    CIFAR's 3 x 32 x 32 is not shipped) with random labels of its classes: the same work per
    image as real data."""
    shape = tuple(dict(bm.input_spec)[bm.features])
    if images[0].size == int(np.prod(shape)):
        return images, labels, source
    rng = np.random.default_rng(seed)
    n = images.shape[0]
    classes = int(np.prod(dict(bm.input_spec)[bm.target]))
    return (rng.random((n, *shape), dtype=np.float32), rng.integers(0, classes, n),
            f"synthetic {'x'.join(map(str, shape))}")


def load_images(n: int, data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray, str]:
    """The first ``n`` training images (n, 28, 28) and labels (MNIST if found, else synthetic
    data), and where they came from."""
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
        return images, labels, f"mnist:{d}"
    rng = np.random.default_rng(0)
    return (rng.random((n, 28, 28), dtype=np.float32), rng.integers(0, 10, n), "synthetic")

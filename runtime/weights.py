"""CNN parameter shapes, initial weights, and the weights file format (independent of C).

Shapes are the dump's parameter shapes flattened to their leaves (``[6, [5, 5]]`` -> (6, 5, 5)),
listed in context order, which is also the order of the fields of the generated ``cnn_params``.

Weights files are NumPy ``.npz`` archives (no pickles) holding one array per parameter and a
``__meta__`` entry: a JSON object with ``format`` (``"proved-kernels-weights"``), ``version``
(1), ``model``, ``precision`` (``"f32"``/``"f64"``) and ``shapes`` (name -> list of ints).
``save_weights`` writes atomically: a temporary file in the target directory, flushed and
fsync'ed, then ``os.replace``d over the target, so a reader (or a crash) never sees half a file.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

FORMAT = "proved-kernels-weights"
VERSION = 1

# model -> {parameter: shape}, in context order
PARAM_SHAPES: dict[str, dict[str, tuple[int, ...]]] = {
    "cnn": {
        "k1": (6, 5, 5),
        "b1": (6,),
        "k2": (12, 6, 5, 5),
        "b2": (12,),
        "fc": (10, 12, 1, 4, 4),
        "b": (10,),
    }
}

# The initial weights of the SaC reference implementation: every element is this constant.
SAC_INIT = {"k1": 1 / 25, "b1": 1 / 6, "k2": 1 / 150, "b2": 1 / 12, "fc": 1 / 192, "b": 1 / 10}

# Inputs that feed each parameter's layer (the bias shares its layer's fan-in).
FAN_IN = {"k1": 25, "b1": 25, "k2": 150, "b2": 150, "fc": 192, "b": 192}

DTYPES = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}


def check_precision(precision: str) -> np.dtype:
    if precision not in DTYPES:
        raise ValueError(f"precision must be 'f32' or 'f64', not {precision!r}")
    return DTYPES[precision]


def param_shapes(model: str) -> dict[str, tuple[int, ...]]:
    if model not in PARAM_SHAPES:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(PARAM_SHAPES)}")
    return PARAM_SHAPES[model]


def init_params(
    model: str = "cnn", init: str = "sac", seed: int = 0, precision: str = "f32"
) -> dict[str, np.ndarray]:
    """Fresh initial parameters.

    ``init="sac"``: the SaC reference constants (``SAC_INIT``). ``init="random"``: independent
    uniform draws in ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]`` from ``numpy.random.default_rng(seed)``,
    drawn in float64 in context order and then rounded, so f32 and f64 start from the same
    weights up to rounding.
    """
    dtype = check_precision(precision)
    shapes = param_shapes(model)
    if init == "sac":
        return {n: np.full(s, SAC_INIT[n], dtype=dtype) for n, s in shapes.items()}
    if init == "random":
        rng = np.random.default_rng(seed)
        out = {}
        for n, s in shapes.items():
            bound = 1.0 / math.sqrt(FAN_IN[n])
            out[n] = rng.uniform(-bound, bound, size=s).astype(dtype)
        return out
    raise ValueError(f"init must be 'sac' or 'random', not {init!r}")


def save_weights(
    path: str | os.PathLike, params: dict[str, np.ndarray], model: str, precision: str
) -> Path:
    """Write ``params`` to ``path`` (.npz) atomically; returns the path."""
    path = Path(path)
    shapes = param_shapes(model)
    check_precision(precision)
    if set(params) != set(shapes):
        raise ValueError(f"expected parameters {sorted(shapes)}, got {sorted(params)}")
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "model": model,
        "precision": precision,
        "shapes": {n: list(s) for n, s in shapes.items()},
    }
    arrays = {n: np.ascontiguousarray(params[n]) for n in shapes}
    arrays["__meta__"] = np.array(json.dumps(meta))
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return path


def load_weights(path: str | os.PathLike, model: str | None = None) -> tuple[dict, dict]:
    """Read a weights file; returns (params, meta). Checks the format tag, model and shapes."""
    path = Path(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a weights file ({e})") from None
    with archive:
        if "__meta__" not in archive.files:
            raise ValueError(f"{path}: not a weights file (no __meta__ entry)")
        meta = json.loads(str(archive["__meta__"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: format tag is {meta.get('format')!r}, expected {FORMAT!r}")
        if meta.get("version") != VERSION:
            raise ValueError(f"{path}: weights format version {meta.get('version')} not supported")
        if model is not None and meta.get("model") != model:
            raise ValueError(f"{path}: weights are for model {meta.get('model')!r}, not {model!r}")
        shapes = param_shapes(meta["model"])
        params = {}
        for n, s in shapes.items():
            if n not in archive.files:
                raise ValueError(f"{path}: parameter {n!r} missing")
            a = archive[n]
            if a.shape != s or tuple(meta["shapes"].get(n, ())) != s:
                raise ValueError(f"{path}: parameter {n!r} has shape {a.shape}, expected {s}")
            if a.dtype.kind != "f":
                raise ValueError(f"{path}: parameter {n!r} has dtype {a.dtype}, expected float")
            params[n] = a
    return params, meta

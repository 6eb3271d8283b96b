"""Initial weights and the weights file format (independent of C); shapes come from the dump.

Parameter shapes are the dump's shapes flattened to their leaves (``[6, [5, 5]]`` ->
(6, 5, 5)), listed in context order (``runtime.spec``), which is also the order of the fields
of the generated ``M_params``.

Initial weights (``init_params``), derived from the dump alone:

- ``"sac"``, the constant initialisation of the SaC reference of the paper, generalised: every
  element of a parameter of rank >= 2 is ``1/fan_in``, every element of a rank-1 parameter of
  length ``n`` is ``1/n`` (for the CNN: k1 1/25, b1 1/6, k2 1/150, b2 1/12, fc 1/192, b 1/10);
- ``"random"``: independent uniform draws in ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]`` from
  ``numpy.random.default_rng(seed)``, drawn in float64 in context order and then rounded, so
  f32 and f64 start from the same weights up to rounding;
- ``"he"`` (He et al. 2015, for ReLU networks): every parameter of rank >= 2 from the normal
  distribution of variance ``2/fan_in`` (drawn as for ``"random"``), every rank-1 parameter
  zero: biases, and a scalar that scales a residual branch, which then starts as the identity
  (Fixup's start; models/resnet20.model). A layer normalisation's gain is rank 1 too, and
  would start at zero: such a model wants ``"random"``.

Weights files are NumPy ``.npz`` archives (no pickles) holding one array per parameter and a
``__meta__`` entry: a JSON object with ``format`` (``"proved-kernels-weights"``), ``version``
(1), ``model``, ``precision`` (``"f32"``/``"f64"``) and ``shapes`` (name -> list of ints).
A file saved after training with momentum is of ``version`` 2: it also holds the velocity of
SGD with momentum, one array ``velocity/NAME`` per trained parameter (its shape), and
``__meta__`` adds ``momentum`` (the ``mu`` it was accumulated with) and ``velocity`` (the
names), so that training resumed from the file continues exactly where it stopped. Files
without a velocity stay version 1 (readable by the runtimes before version 2); both are read.
A file saved after training with Adam, AdamW, or SGD with weight decay, clipping or a schedule
(``runtime.optim``) is of ``version`` 3: ``__meta__["optimizer"]`` records the optimiser, its
hyperparameters, its step count and its schedule, and the arrays ``optim/m/NAME`` and
``optim/v/NAME`` hold Adam's moments (a velocity, for SGD with momentum, as in version 2;
``read_optimizer`` reads the state).
``__meta__`` may also hold ``targets``, what the weights were trained on: ``"classes"``
(integer labels, one-hot) or ``"values"`` (float targets, a regression), so that predictions
on data without labels are written as classes or as values alone; readers that do not know
the key ignore it, so it needs no new version.
``save_weights`` writes atomically (``runtime._files.atomic_write``: a temporary file in the
target directory, flushed and fsync'ed, given the permissions of the umask, then
``os.replace``d over the target), so a reader (or a crash) never sees half a file.
``load_weights`` turns any unreadable, truncated or corrupt file, or one holding NaN or inf,
into a ``ValueError`` that names it; ``save_weights`` refuses to write NaN or inf.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ._files import atomic_write
from .sizes import DataLimitError, check_npy_or_npz, npz_members

FORMAT = "proved-kernels-weights"
VERSION = 1           # written without a velocity
VERSION_VELOCITY = 2  # written with one (a momentum training's state)
VERSION_OPTIM = 3     # written with the state of another optimiser (runtime.optim)
VERSIONS = (VERSION, VERSION_VELOCITY, VERSION_OPTIM)
VELOCITY = "velocity/"  # the prefix of a velocity entry's name in the archive
OPTIM = "optim/"        # the prefix of an optimiser state's array (optim/m/NAME, optim/v/NAME)
TARGETS = ("classes", "values")  # __meta__'s optional record of what training fitted

DTYPES = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}


def check_precision(precision: str) -> np.dtype:
    if precision not in DTYPES:
        raise ValueError(f"precision must be 'f32' or 'f64', not {precision!r}")
    return DTYPES[precision]


def _spec(model):
    """A ``ModelSpec`` from a spec, a ``Model`` (its ``spec``), a name or a path."""
    from .spec import ModelSpec, model_spec

    if isinstance(model, ModelSpec):
        return model
    spec = getattr(model, "spec", None)
    if isinstance(spec, ModelSpec):
        return spec
    return model_spec(model)


def param_shapes(model) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape, in context order, of ``model`` (spec, Model, name or path)."""
    return dict(_spec(model).param_shapes)


def sac_constants(model) -> dict[str, float]:
    """The constant of each parameter under ``init="sac"``: ``1/fan_in`` (rank >= 2) or
    ``1/length`` (rank 1)."""
    spec = _spec(model)
    shapes = spec.param_shapes
    return {n: 1.0 / (spec.fan_in[n] if len(shapes[n]) >= 2 else max(shapes[n][0], 1))
            for n in spec.trained}


INITS = ("random", "sac", "he")     # the initialisations init_params knows


def check_init(init: str) -> None:
    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(map(repr, INITS))}, not {init!r}")


def init_params(model, init: str = "random", seed: int = 0, precision: str = "f32",
                consts: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Fresh initial parameters of ``model`` (a ``ModelSpec``, ``Model``, name or path): see
    the module docstring for ``init`` (``INITS``: "random", "sac" or "he"). A model's consts are
    not initialised: ``consts`` gives their values (name -> array), and one missing is an error."""
    dtype = check_precision(precision)
    check_init(init)
    spec = _spec(model)
    consts = dict(consts or {})
    unknown = sorted(set(consts) - set(spec.consts))
    if unknown:
        raise ValueError(f"{spec.describe()}: {', '.join(unknown)}: not a const of the model "
                         f"(consts: {', '.join(spec.consts) or 'none'})")
    missing = [c for c in spec.consts if c not in consts]
    if missing:
        raise ValueError(
            f"{spec.describe()}: the const{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} ha{'ve' if len(missing) > 1 else 's'} no value (a const is "
            f"fixed, never initialised): give {'their values' if len(missing) > 1 else 'its value'}"
            f" with the weights: --weights FILE (a file written by Model.save or `python -m "
            f"extract import`, or an .npz of the consts alone: numpy.savez(FILE, "
            f"{missing[0]}=...)), or runtime.load(model, weights={{{missing[0]!r}: array, ...}})")
    shapes, out = spec.param_shapes, dict(consts)
    fill = sac_constants(spec) if init == "sac" else None
    rng = np.random.default_rng(seed)
    for n in spec.trained:
        if fill is not None:
            out[n] = np.full(shapes[n], fill[n], dtype=dtype)
        elif init == "he":
            out[n] = (rng.normal(0.0, math.sqrt(2.0 / spec.fan_in[n]), size=shapes[n])
                      if len(shapes[n]) >= 2 else np.zeros(shapes[n])).astype(dtype)
        else:
            bound = 1.0 / math.sqrt(spec.fan_in[n])
            out[n] = rng.uniform(-bound, bound, size=shapes[n]).astype(dtype)
    return {n: out[n] for n in spec.param_shapes}  # context order


def read_consts(path: str | os.PathLike, model) -> dict[str, np.ndarray] | None:
    """The arrays of an .npz that holds values of ``model``'s consts and no parameter (a
    weights file of the consts alone, or ``numpy.savez(path, m=...)``; its ``__meta__``, if
    any, is not needed); None for any other file, which ``load_weights`` then reads (and
    explains). The shapes are checked where the values are copied in."""
    spec = _spec(model)
    if not spec.consts:
        return None
    try:
        check_npy_or_npz(path)      # sizes before memory (runtime/sizes.py)
        with np.load(Path(path), allow_pickle=False) as archive:
            names = set(archive.files) - {"__meta__"}
            if not names or names & set(spec.trained):
                return None
            return {n: archive[n] for n in sorted(names)}
    except Exception:  # not an .npz, unreadable: load_weights says what is wrong
        return None


def read_plain(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """The arrays of an .npz without a ``__meta__`` entry (``numpy.savez(FILE, w1=..., ...)``,
    weights from elsewhere), or None for any other file; ``runtime.load`` checks them against
    the model as it checks a dict."""
    check_npy_or_npz(path)      # sizes before memory (runtime/sizes.py)
    try:
        with np.load(Path(path), allow_pickle=False) as archive:
            if not hasattr(archive, "files") or "__meta__" in archive.files:
                return None
            out = {}
            for n in archive.files:
                try:
                    out[n] = archive[n]
                except ValueError as e:
                    if "allow_pickle" not in str(e):
                        raise
                    raise _Bad(f"{path}: array {n!r} holds Python objects (pickled), which are "
                               f"not read; an .npz of weights holds float arrays") from None
            return out
    except _Bad as e:
        raise ValueError(str(e)) from None
    except Exception:  # not an .npz, unreadable: load_weights says what is wrong
        return None


def names_differ(what: str, expected, got) -> str:
    """The message for arrays named unlike the model's: what is missing, what is not the
    model's.

    >>> names_differ("parameters", ["w", "b"], ["w", "bias"])
    "expected parameters ['b', 'w']: missing ['b'], not the model's ['bias']"
    """
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    parts = ([f"missing {missing}"] if missing else []) + \
        ([f"not the model's {extra}"] if extra else [])
    return f"expected {what} {sorted(expected)}: {', '.join(parts)}"


def _shapes_of(model, params) -> tuple[str, dict[str, tuple[int, ...]]]:
    """(model name, expected shapes) for saving: from a spec/Model, or a name and the arrays."""
    if isinstance(model, str):
        return model, {n: tuple(np.shape(a)) for n, a in params.items()}
    spec = _spec(model)
    return spec.name, dict(spec.param_shapes)


def save_weights(path: str | os.PathLike, params: Mapping[str, np.ndarray], model,
                 precision: str, shapes: Mapping[str, tuple[int, ...]] | None = None,
                 velocity: Mapping[str, np.ndarray] | None = None,
                 momentum: float | None = None, targets: str | None = None,
                 optimizer: tuple[dict, Mapping[str, np.ndarray]] | None = None) -> Path:
    """Write ``params`` to ``path`` (.npz) atomically; returns the path.

    ``model``: a ``ModelSpec``/``Model`` (its name and parameter shapes are used), or a model
    name; ``shapes`` (name -> shape) then defaults to the shapes of the arrays. ``velocity``
    (name -> array, every trained parameter: a model's consts have none) and ``momentum``, the
    state of SGD with momentum, make a version-2 file (module docstring). ``targets``
    (``"classes"`` or ``"values"``) records what the weights were trained on. ``optimizer``:
    (record, arrays) of ``runtime.optim``'s state, which make a version-3 file."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a directory: weights are saved to a file (.npz)")
    name, expected = _shapes_of(model, params)
    if shapes is not None:
        expected = {n: tuple(s) for n, s in shapes.items()}
    check_precision(precision)
    if targets not in TARGETS + (None,):
        raise ValueError(f"targets must be one of {TARGETS} or None, got {targets!r}")
    if set(params) != set(expected):
        raise ValueError(names_differ("parameters", expected, params))
    for n, s in expected.items():
        _writable(f"parameter {n}", params[n], s, path)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "model": name,
        "precision": precision,
        "shapes": {n: list(s) for n, s in expected.items()},
        **({} if targets is None else {"targets": targets}),
    }
    arrays = {n: np.ascontiguousarray(params[n]) for n in expected}
    if velocity is not None:
        trained = (list(_spec(model).trained) if not isinstance(model, str)
                   else list(velocity))
        if set(velocity) != set(trained) or not set(trained) <= set(expected):
            raise ValueError(f"the velocity must have an array per trained parameter "
                             f"{sorted(trained)}, got {sorted(velocity)}")
        if (isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating))
                or not 0 < momentum < 1):
            raise ValueError(f"a velocity is saved with its momentum in (0, 1), got "
                             f"{momentum!r}")
        for n in trained:
            _writable(f"the velocity of {n}", velocity[n], expected[n], path)
            arrays[VELOCITY + n] = np.ascontiguousarray(velocity[n])
        meta.update(version=VERSION_VELOCITY, momentum=float(momentum), velocity=trained)
    elif momentum is not None:
        raise ValueError("momentum is saved with a velocity, and none was given")
    if optimizer is not None:
        record, extra = optimizer
        for key, a in extra.items():
            if not np.isfinite(a).all():
                raise ValueError(f"the optimiser's {key} holds NaN or inf: {path} not written")
            arrays[OPTIM + key] = np.ascontiguousarray(a)
        meta.update(version=VERSION_OPTIM, optimizer=dict(record))
    arrays["__meta__"] = np.array(json.dumps(meta))
    directory = path.parent if str(path.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda f: np.savez(f, **arrays))


def _writable(what: str, a, shape: tuple[int, ...], path: Path) -> None:
    """Raise ValueError unless ``a`` has ``shape`` and is finite (what the reader requires)."""
    if tuple(np.shape(a)) != shape:
        raise ValueError(f"{what} must have shape {shape}, got {np.shape(a)}")
    if not np.isfinite(a).all():
        raise ValueError(f"{what} holds NaN or inf: {path} not written")


def load_weights(path: str | os.PathLike, model: str | None = None,
                 shapes: Mapping[str, tuple[int, ...]] | None = None) -> tuple[dict, dict]:
    """Read a weights file; returns (params, meta).

    Checks the format tag and version, that the file is of ``model`` (a name; any if None),
    and that it holds exactly the parameters ``shapes`` (name -> shape, the model's dump
    shapes; by default those recorded in the file) with those shapes and a float dtype. Any
    problem, including a truncated or corrupt file, raises ``ValueError`` naming ``path``.
    A velocity in the file is checked too; ``read_weights`` returns it."""
    params, meta, _ = read_weights(path, model, shapes)
    return params, meta


def read_weights(path: str | os.PathLike, model: str | None = None,
                 shapes: Mapping[str, tuple[int, ...]] | None = None
                 ) -> tuple[dict, dict, dict | None]:
    """``load_weights``, and the file's velocity: (params, meta, velocity or None), the
    velocity's momentum in ``meta["momentum"]``."""
    path = Path(path)
    try:
        return _load_weights(path, model, shapes)
    except _Bad as e:
        raise ValueError(f"{path}: {e}") from None
    except DataLimitError:
        raise
    except Exception as e:  # zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError, ...
        raise ValueError(f"{path}: not a weights file, or a corrupt or truncated one "
                         f"({type(e).__name__}: {e})") from None


class _Bad(Exception):
    """A problem found while reading a weights file (the caller prefixes the path)."""


def _load_weights(path: Path, model, shapes) -> tuple[dict, dict]:
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except FileNotFoundError:
        raise _Bad("no such file") from None
    if magic[:2] != b"PK":  # every zip archive starts with a "PK" signature
        raise _Bad("not a weights file (" + ("not an .npz archive" if magic else "empty") + ")")
    npz_members(path, dict(shapes) if shapes is not None else None)  # before memory
    archive = np.load(path, allow_pickle=False)
    if not hasattr(archive, "files"):
        raise _Bad("not a weights file (not an .npz archive)")
    with archive:
        if "__meta__" not in archive.files:
            raise _Bad("not a weights file (no __meta__ entry: Model.save and save_weights "
                       "write one; runtime.load reads a plain .npz of arrays too)")
        try:
            meta = json.loads(str(archive["__meta__"]))
        except json.JSONDecodeError as e:
            raise _Bad(f"not a weights file (__meta__ is not JSON: {e.msg})") from None
        if not isinstance(meta, dict):
            raise _Bad("not a weights file (__meta__ is not a JSON object)")
        if meta.get("format") != FORMAT:
            raise _Bad(f"format tag is {meta.get('format')!r}, expected {FORMAT!r}")
        version = meta.get("version")
        if version not in VERSIONS or isinstance(version, bool):
            raise _Bad(f"weights format version {version} not supported (known: "
                       f"{', '.join(map(str, VERSIONS))})")
        if model is not None and meta.get("model") != model:
            raise _Bad(f"weights are for model {meta.get('model')!r}, not {model!r}")
        if meta.get("precision") not in DTYPES:
            raise _Bad(f"unknown precision {meta.get('precision')!r} in __meta__")
        if meta.get("targets", "classes") not in TARGETS:
            raise _Bad(f"__meta__'s targets is {meta['targets']!r}, expected one of {TARGETS}")
        recorded = meta.get("shapes")
        if not isinstance(recorded, dict) or not all(
            isinstance(s, list) and all(isinstance(d, int) for d in s) for s in recorded.values()
        ):
            raise _Bad("__meta__ has no valid 'shapes' entry")
        recorded = {n: tuple(s) for n, s in recorded.items()}
        expected = recorded if shapes is None else {n: tuple(s) for n, s in shapes.items()}
        stored = set(archive.files) - {"__meta__"}
        velocity_names = meta.get("velocity", []) if version >= VERSION_VELOCITY else []
        if ((version == VERSION_VELOCITY or "velocity" in meta and version > VERSION_VELOCITY)
                and not (isinstance(velocity_names, list) and velocity_names
                         and all(isinstance(n, str) for n in velocity_names))):
            raise _Bad("__meta__ of a version-2 file has no valid 'velocity' list")
        in_velocity = {n for n in stored if n.startswith(VELOCITY)}
        if in_velocity != {VELOCITY + n for n in velocity_names}:
            raise _Bad(f"velocity entries for {sorted(n[len(VELOCITY):] for n in in_velocity)}"
                       f" do not match __meta__'s list {velocity_names}")
        stored -= in_velocity
        if version == VERSION_OPTIM and not isinstance(meta.get("optimizer"), dict):
            raise _Bad("__meta__ of a version-3 file has no 'optimizer' record")
        stored -= {n for n in stored if n.startswith(OPTIM)}
        if stored - set(expected):
            raise _Bad(f"unexpected parameter(s) {sorted(stored - set(expected))}; the model "
                       f"has {', '.join(expected)}")
        params = {}
        for n, s in expected.items():
            if n not in archive.files:
                raise _Bad(f"parameter {n!r} missing")
            if recorded.get(n) != s:  # __meta__'s shape, not the model's
                raise _Bad(f"parameter {n!r} has shape {archive[n].shape}, expected {s}")
            params[n] = _readable(archive, n, f"parameter {n!r}", s)
        velocity = None
        if velocity_names:
            mu = meta.get("momentum")
            if (isinstance(mu, bool) or not isinstance(mu, (int, float))
                    or not 0 < mu < 1):
                raise _Bad(f"__meta__'s momentum is {mu!r}, expected a number in (0, 1)")
            velocity = {}
            for n in velocity_names:
                if n not in expected:
                    raise _Bad(f"a velocity for {n!r}, which is not a parameter")
                velocity[n] = _readable(archive, VELOCITY + n, f"the velocity of {n!r}",
                                        expected[n])
    return params, meta, velocity


def read_optimizer(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]] | None:
    """The optimiser state of a version-3 weights file (``runtime.optim``): its record and
    arrays (``m/NAME``, ``v/NAME``), or None for a file without one. Call after
    ``read_weights`` has checked the file."""
    with np.load(path, allow_pickle=False) as archive:
        meta = json.loads(str(archive["__meta__"]))
        if meta.get("version") != VERSION_OPTIM:
            return None
        return meta["optimizer"], {n[len(OPTIM):]: archive[n] for n in archive.files
                                   if n.startswith(OPTIM)}


def _readable(archive, key: str, what: str, shape: tuple[int, ...]) -> np.ndarray:
    """``archive[key]``, of ``shape``, a float dtype and finite, or ``_Bad`` naming ``what``."""
    a = archive[key]
    if a.shape != shape:
        raise _Bad(f"{what} has shape {a.shape}, expected {shape}")
    if a.dtype.kind != "f":
        raise _Bad(f"{what} has dtype {a.dtype}, expected float")
    if not np.isfinite(a).all():
        raise _Bad(f"{what} holds NaN or inf")
    return a

"""What the runtime knows about a model: read from its expression dump, nothing hard-coded.

``model_spec(model)`` accepts the kinds of ``KINDS`` (one predicate and one reader each, tried
in order), among them

- a built-in model's name (``"cnn"``): its dump is ``extract.emit.build.dump_path(name)`` (the
  lookup of ``$PROVED_KERNELS_DUMPS``, the package, the checkout's ``build/dump``);
- a path to a dump (``*.json``, docs/dump-format.md);
- a path to a model file (``*.model``): ``extract.front.frontend.compile_model`` turns it into
  a dump, which is written, content-addressed, to ``<kernel cache>/dumps/<sha256>.json`` so
  that the kernels can be generated from a file;
- a ``runtime.builder.ModelBuilder``: its text (``text()``) takes the model file's path, with
  ``<NAME.model>`` as the file name in error messages;
- a model file's or a dump's text, a decoded dump, a ``ModelSpec`` (``runtime.load``);

and returns a ``ModelSpec``: parameter shapes (the dump's shape trees flattened to their
leaves, ``[6, [5, 5]]`` -> ``(6, 5, 5)``), fan-ins, inputs, the optional ``data`` declaration
(``features`` and a one-hot ``target`` whose number of elements is the number of classes) and
the ``outputs`` (``prediction``, ``loss``). A dump whose ``data`` names only one of the two
loads, but cannot be trained (``has_data`` is false), and so does a dump without ``data``: the
runtime never guesses which input is which.

Fan-in of a parameter (the bound of the random initialisation is ``1/sqrt(fan_in)``): the
dump's ``fan_in`` when present; otherwise ``size / first dimension`` for a parameter of rank
>= 2, and for a rank-1 parameter the fan-in of the nearest preceding parameter of rank >= 2
(1 if there is none).
"""

from __future__ import annotations

import hashlib
import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ModelSpec", "ModelCompileError", "model_spec", "spec_from_dump", "leaves", "ir_model"]


class ModelCompileError(RuntimeError):
    """A model file could not be compiled (the Agda executable is missing, crashed, ...)."""


def leaves(shape) -> tuple[int, ...]:
    """A dump shape (leaf ``n`` or pair ``[s, p]``) as a NumPy shape: its leaves, left to right."""
    if isinstance(shape, bool):
        raise ValueError(f"not a shape: {shape!r}")
    if isinstance(shape, int):
        if shape < 0:
            raise ValueError(f"not a shape: {shape!r}")
        return (shape,)
    if isinstance(shape, (list, tuple)) and len(shape) == 2:
        return leaves(shape[0]) + leaves(shape[1])
    raise ValueError(f"not a shape: {json.dumps(shape)[:60]}")


@dataclass(frozen=True)
class ModelSpec:
    """A model as the runtime sees it (all from the dump)."""

    name: str
    dump: Path | None  # the dump file (None: a decoded dump given directly)
    kernels_dump: Path | None  # what to generate the kernels from (None: extract's built-in)
    param_shapes: dict[str, tuple[int, ...]]  # the stored arrays (params, consts), context order
    fan_in: dict[str, int]
    input_shapes: dict[str, tuple[int, ...]]  # in context order
    value_shapes: dict[str, tuple[int, ...]]  # chain bindings
    outputs: dict[str, str]
    features: str | None = None
    target: str | None = None
    raw: dict = field(default=None, repr=False, compare=False)
    source: str | None = field(default=None, compare=False)  # the model file compiled, if one
    consts: tuple[str, ...] = ()  # those of param_shapes that are fixed (role const): no gradient

    @property
    def trained(self) -> tuple[str, ...]:
        """The parameters training changes: ``param_shapes`` but the consts."""
        return tuple(n for n in self.param_shapes if n not in self.consts)

    @property
    def has_data(self) -> bool:
        """Whether the dump names both the features and the target (what training needs)."""
        return self.features is not None and self.target is not None

    @property
    def input_shape(self) -> tuple[int, ...] | None:
        """The shape of one sample's features (``None`` when the dump declares no ``data``)."""
        return self.input_shapes[self.features] if self.features else None

    @property
    def n_classes(self) -> int | None:
        """Elements of the one-hot target (``None`` when the dump declares no ``data``)."""
        return math.prod(self.input_shapes[self.target]) if self.target else None

    @property
    def prediction(self) -> str | None:
        return self.outputs.get("prediction")

    @property
    def loss(self) -> str | None:
        return self.outputs.get("loss")

    @property
    def output_shape(self) -> tuple[int, ...] | None:
        """Shape of the prediction output of one sample (``None`` without one)."""
        p = self.prediction
        return self.value_shapes[p] if p else None

    def describe(self) -> str:
        where = self.source or self.dump
        return "model " + repr(self.name) + (f" ({where})" if where else "")


def _fan_ins(context: list[dict], shapes: dict[str, tuple[int, ...]]) -> dict[str, int]:
    out: dict[str, int] = {}
    last = 1  # fan-in of the nearest preceding parameter of rank >= 2
    for c in context:
        if c.get("role") != "param":
            continue
        n, s = c["name"], shapes[c["name"]]
        if "fan_in" in c:
            f = c["fan_in"]
            if isinstance(f, bool) or not isinstance(f, int) or f < 1:
                raise ValueError(f"parameter {n!r}: fan_in must be a positive integer, got {f!r}")
        elif len(s) >= 2:
            f = max(math.prod(s) // s[0], 1) if s[0] else 1
        else:
            f = last
        if len(s) >= 2:
            last = f
        out[n] = f
    return out


def spec_from_dump(data: dict, dump: Path | None = None,
                   kernels_dump: Path | None = None) -> ModelSpec:
    """A ``ModelSpec`` from a decoded dump. Checks only what the runtime relies on (the
    extractor checks the rest); a problem raises ``ValueError`` naming the dump."""
    where = f"{dump}: " if dump is not None else ""
    try:
        if not isinstance(data, dict):
            raise ValueError("a dump is a JSON object")
        if data.get("format") != "ad-expression-dump":
            raise ValueError(f"not an expression dump (format {data.get('format')!r})")
        name = data.get("model")
        if not isinstance(name, str) or not name:
            raise ValueError(f"no model name (model {name!r})")
        context = data.get("context")
        if not isinstance(context, list):
            raise ValueError("context must be an array")
        params, inputs, consts = {}, {}, []
        for c in context:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str):
                raise ValueError(f"bad context entry {json.dumps(c)[:80]}")
            shape = leaves(c.get("shape"))
            if c.get("role") == "const" and data.get("version") in (1, 2):
                raise ValueError(f"context entry {c['name']!r}: role 'const' is in dump version "
                                 f"3, the dump says {data['version']}")
            if c.get("role") in ("param", "const"):
                params[c["name"]] = shape
                if c["role"] == "const":
                    consts.append(c["name"])
            elif c.get("role") == "input":
                inputs[c["name"]] = shape
            else:
                raise ValueError(f"context entry {c['name']!r} has role {c.get('role')!r}")
        values = {}
        for b in data.get("chain") or []:
            if isinstance(b, dict) and isinstance(b.get("name"), str):
                values[b["name"]] = leaves(b.get("shape"))
        outputs = data.get("outputs") or {}
        if not isinstance(outputs, dict):
            raise ValueError("outputs must be an object")
        for key, val in outputs.items():
            if val not in values:
                raise ValueError(f"outputs.{key} names {val!r}, which is not a chain binding")
        features = target = None
        if data.get("data") is not None:
            d = data["data"]
            if not isinstance(d, dict):
                raise ValueError('data must be {"features": NAME, "target": NAME}')
            features, target = d.get("features"), d.get("target")
            for role, n in (("features", features), ("target", target)):
                if n is not None and n not in inputs:
                    raise ValueError(f"data.{role} names {n!r}, which is not an input "
                                     f"(inputs: {', '.join(inputs) or 'none'})")
            if features is not None and features == target:
                raise ValueError("data.features and data.target name the same input")
        fan_in = _fan_ins(context, params)
    except ValueError as e:
        raise ValueError(f"{where}{e}") from None
    return ModelSpec(name, dump, kernels_dump, params, fan_in, inputs, values, dict(outputs),
                     features, target, data, consts=tuple(consts))


def _json(text: str):
    """``json.loads``, whose recursion on deeply nested text is a ``ValueError`` too (the
    extractor says how deep a dump may nest: ``extract.ir.dump.MAX_JSON_DEPTH``)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON nests too deeply to decode (a dump's expressions nest at "
                         "most 1000 nodes deep)") from None


def _read_json(path: Path) -> dict:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise FileNotFoundError(f"no dump file {path}") from None
    try:
        return _json(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") \
            from None
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _extract_build():
    try:
        from extract.emit import build
    except ModuleNotFoundError as e:
        if e.name not in ("extract", "extract.emit.build"):
            raise
        raise ValueError("built-in models need the `extract` package, which is not "
                         "importable") from e
    return build


def _builtin(name: str) -> ModelSpec:
    path = _extract_build().dump_path(name)  # an unknown name is a ValueError
    return spec_from_dump(_read_json(path), path, None)


def dump_cache_path(text: str) -> Path:
    """Where the dump compiled from a model file is kept: content-addressed in the cache."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    return _extract_build().cache_dir() / "dumps" / f"{digest}.json"


def _model_file(path: Path) -> ModelSpec:
    return _compiled(path, None)


def _compiled(source, shown: str | None) -> ModelSpec:
    """The spec of a model file (``source`` a ``Path``) or of a model's text (a ``str``; its
    file name in messages is ``shown``), through ``compile_model`` and the dump cache."""
    try:
        from extract.front import frontend
    except ModuleNotFoundError as e:
        if e.name not in ("extract", "extract.front.frontend"):
            raise
        raise ModelCompileError(f"cannot compile {shown or source}: extract.front.frontend is not "
                                f"available") from e
    if isinstance(source, Path) and not source.is_file():
        raise FileNotFoundError(f"no model file {source}")
    path = shown or source
    try:
        text = frontend.compile_model(source, name_hint=shown)
    except RuntimeError as e:  # missing or broken Agda executable (ModelError passes through)
        if type(e).__name__ == "TimeLimitError":    # extract.limits: the caller's limit
            raise
        raise ModelCompileError(str(e)) from None
    try:
        data = _json(text)
    except json.JSONDecodeError as e:
        raise ModelCompileError(f"{path}: the compiled dump is not JSON ({e.msg})") from None
    except ValueError as e:
        raise ModelCompileError(f"{path}: the compiled dump: {e}") from None
    out = _cached(text)
    return dataclasses.replace(spec_from_dump(data, out, out), source=str(path))


def _is_builder(model) -> bool:
    """A model written from Python (``runtime.builder.ModelBuilder``, or anything that, like it,
    has a ``name`` and gives its model file by ``text()``). Recognised by what it does, so that
    this module, below the builder, does not import it."""
    return (not isinstance(model, (str, bytes, dict, os.PathLike, ModelSpec))
            and callable(getattr(model, "text", None)) and isinstance(getattr(model, "name", None), str))


def model_spec(model, dump=None) -> ModelSpec:
    """The ``ModelSpec`` of ``model``, of the first kind of ``KINDS`` it is (a ``ModelSpec``, a
    ``ModelBuilder``, a decoded dump, a dump's or a model file's text, a model file's or a dump's
    path, a built-in model's name; ``runtime.load``'s docstring). ``dump``: generate a built-in
    model's kernels from this dump file instead (the dump must be of that model)."""
    if dump is not None:
        return _builtin_from(model, dump)
    for is_kind, spec_of in KINDS:
        if is_kind(model):
            return spec_of(model)
    raise ValueError(f"model must be a name, a path, a ModelBuilder, a model's text or a "
                     f"dump, got {type(model).__name__}")


def _builtin_from(model, dump) -> ModelSpec:
    """A built-in model (its name, or its ``ModelSpec``) generated from the dump file ``dump``."""
    if _is_builder(model):
        raise ValueError(f"dump= is for a built-in model's name; model {model.name} is a "
                         f"ModelBuilder, compiled from its text")
    path = Path(dump)
    spec = spec_from_dump(_read_json(path), path, path)
    given = model.name if isinstance(model, ModelSpec) else model
    if given is not None and not _is_file_form(given) and given != spec.name:
        raise ValueError(f"{path} is a dump of model {spec.name!r}, not {given!r}")
    if given is not None and _is_file_form(given):
        raise ValueError(f"dump= is for a built-in model's name; {given} is already a file")
    return spec


# -- the kinds of model, one predicate and one reader each ----------------------------------------

def _text(model) -> str:
    """A ``str`` model stripped of surrounding white space ("" for any other type)."""
    return model.strip() if isinstance(model, str) else ""


def _is_spec(model) -> bool:
    """A ``ModelSpec``, returned as it is."""
    return isinstance(model, ModelSpec)


def _spec_as_is(model: ModelSpec) -> ModelSpec:
    """The ``ModelSpec`` itself."""
    return model


def _builder_spec(model) -> ModelSpec:
    """A ``ModelBuilder``'s text, compiled as a model file named ``<NAME.model>``."""
    return _compiled(model.text(), f"<{model.name}.model>")


def _is_dump_data(model) -> bool:
    """A decoded dump: a ``dict``."""
    return isinstance(model, dict)


def _dump_data_spec(model: dict) -> ModelSpec:
    """A decoded dump, kept in the dump cache as its JSON text."""
    return _from_text(json.dumps(model))


def _is_dump_text(model) -> bool:
    """A dump's JSON text: a string that starts with ``{`` and ends with ``}`` or has lines."""
    text = _text(model)
    return text.startswith("{") and ("\n" in text or text.endswith("}"))


def _is_model_text(model) -> bool:
    """A model file's text: a string of more than one line (that is not a dump's)."""
    return "\n" in _text(model)


def _text_spec(model: str) -> ModelSpec:
    """A dump's or a model file's text, compiled (a model's) and kept in the dump cache."""
    return _from_text(model)


def _is_path(model, suffix: str) -> bool:
    return isinstance(model, (str, os.PathLike)) and Path(os.fspath(model)).suffix == suffix


def _is_model_path(model) -> bool:
    """A path to a model file: ``*.model``."""
    return _is_path(model, ".model")


def _model_path_spec(model) -> ModelSpec:
    """A model file, compiled by the Agda front end (its dump kept in the dump cache)."""
    return _model_file(Path(os.fspath(model)))


def _is_dump_path(model) -> bool:
    """A path to a dump: ``*.json``."""
    return _is_path(model, ".json")


def _dump_path_spec(model) -> ModelSpec:
    """A dump file, read as it is."""
    path = Path(os.fspath(model))
    return spec_from_dump(_read_json(path), path, path)


def _is_name(model) -> bool:
    """Any other string or path: a built-in model's name (or a mistake named as one)."""
    return isinstance(model, (str, os.PathLike))


def _name_spec(model) -> ModelSpec:
    """A built-in model's dump (``extract.emit.build.dump_path``); a file by another name, a
    path or an unknown name is refused, naming a file here that the name may have meant."""
    text = os.fspath(model)
    path = Path(text)
    if ((path.suffix or os.sep in text) and path.is_file()):  # a file, by another name
        with open(path, "rb") as f:
            head = f.read(4096)
        if not head or b"\0" in head or head.startswith(b"PK"):
            raise ValueError(f"{text}: not a model (" + ("an empty file" if not head else
                             "a binary file: weights? The model is a .model or .json file")
                             + ")")
        raise ValueError(f"{text}: a model file's name ends in .model (a dump's in .json); "
                         f"rename it, or give its text: runtime.load(Path({text!r}).read_text())")
    if not text or os.sep in text or (os.altsep and os.altsep in text):
        raise ValueError(f"unknown model {text!r}: not a built-in model's name, a dump (.json) "
                         f"or a model file (.model)")
    try:
        return _builtin(text)
    except ValueError as e:
        here = [f for f in (f"{text}.model", f"{text}.json") if Path(f).is_file()]
        if here and str(e).startswith("unknown model"):
            raise ValueError(f"{e}; did you mean the file {here[0]}?") from None
        raise


# The kinds of ``model`` that ``model_spec`` (and ``runtime.load``) accept, in the order they
# are tried: (is it of this kind?, its ModelSpec). Texts come before paths (a model's text may
# end in ``.model``), names last (whatever string is left).
KINDS = (
    (_is_spec, _spec_as_is),
    (_is_builder, _builder_spec),
    (_is_dump_data, _dump_data_spec),
    (_is_dump_text, _text_spec),
    (_is_model_text, _text_spec),
    (_is_model_path, _model_path_spec),
    (_is_dump_path, _dump_path_spec),
    (_is_name, _name_spec),
)


def _from_text(text: str) -> ModelSpec:
    """A model given as text: a dump's JSON (``{...}``) or a model file's text, each kept in the
    dump cache as a compiled model file is."""
    if not text.lstrip().startswith("{"):
        return _compiled(text, "<model text>")
    try:
        data = _json(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"<dump text>: not JSON ({e.msg}, line {e.lineno})") from None
    except ValueError as e:
        raise ValueError(f"<dump text>: {e}") from None
    spec = spec_from_dump(data, Path("<dump text>"))    # a problem is named as in the text
    out = _cached(text)
    return dataclasses.replace(spec, dump=out, kernels_dump=out)


def _cached(text: str) -> Path:
    """The dump ``text`` in the cache (written atomically unless it is there)."""
    out = dump_cache_path(text)
    if not out.exists() or out.read_text() != text:
        # 0700 and 0600 whatever the umask; a file of its own per writer (threads of one
        # process too), renamed into place (extract/cache.py)
        _extract_build().cache.private_dir(out.parent)
        _extract_build().cache.write_private(out, text)
    return out


def ir_model(spec: ModelSpec):
    """The dump IR of ``spec`` (``extract.ir.dump``: checked as the extractor checks it;
    the ONNX exporter reads it)."""
    from extract.ir import dump
    if spec.dump is not None and Path(spec.dump).is_file():
        return dump.load(spec.dump)
    return dump.parse(spec.raw)


def _is_file_form(model) -> bool:
    suffix = Path(os.fspath(model)).suffix
    return suffix in (".json", ".model")

"""The generated kernels of one model and precision, as seen from Python.

``Kernels.open(model, precision)`` asks ``extract`` to generate, build (cached) and load the C
library (cffi, API mode), then reads the layout of the bundles (``M_inputs``, ``M_params``,
``M_values``) from cffi's type information, so nothing here hard-codes an offset: a field is
located by name. The API it relies on is ``docs/generated-api.md``.
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .weights import check_precision


class KernelsUnavailable(RuntimeError):
    """The generated kernels cannot be loaded, or do not have the documented API."""


class ExtractMissing(KernelsUnavailable):
    """``extract`` (the generator and builder) is not importable in this checkout."""


@dataclass(frozen=True)
class Field:
    offset: int  # in elements of ``real``
    length: int  # in elements


def _load_ffi_lib(model: str, precision: str, dump=None, tape: bool = False):
    try:
        build = importlib.import_module("extract.emit.build")
    except ModuleNotFoundError as e:
        if e.name not in ("extract", "extract.emit.build"):
            raise  # a real import error inside extract: let it show
        raise ExtractMissing(f"cannot import extract.emit.build ({e})") from e
    loader = getattr(build, "load", None)
    if loader is None:
        raise ExtractMissing("extract.emit.build has no load(model, precision)")
    kw = {} if dump is None else {"dump": str(dump)}
    if tape:  # the entry points keeping a forward's values (docs/generated-api.md)
        kw["options"] = importlib.import_module("extract.passes.lower").Options(tape=True)
    got = loader(model, precision, **kw)
    if isinstance(got, tuple):
        return got[0], got[1]
    return got.ffi, got.lib


def _names():
    """extract/ir/names.py: the one mapping of a user's names to C names."""
    return importlib.import_module("extract.ir.names")


class Kernels:
    """ffi, lib and the bundle layouts of ``model`` at ``precision`` ("f32"/"f64")."""

    _cache: dict[tuple[str, str], "Kernels"] = {}

    @classmethod
    def open(cls, model: str, precision: str, dump=None, tape: bool = False) -> "Kernels":
        """``dump``: a dump file to generate from; by default extract's built-in one
        (``extract.emit.build.dump_path``). Kernels are kept per (model, precision) for the built-in
        dump, and per (model, precision, file, content) for a dump file, so editing a dump file
        and loading it again generates new kernels. ``tape``: with ``M_batch_forward`` and
        ``M_batch_backward`` (``runtime.torch``)."""
        check_precision(precision)
        if dump is None:
            key = (model, precision)
        else:
            digest = hashlib.sha256(Path(dump).read_bytes()).hexdigest()
            key = (model, precision, str(dump), digest)
        key += ("tape",) if tape else ()
        if key not in cls._cache:
            ffi, lib = _load_ffi_lib(model, precision, dump, tape)
            cls._cache[key] = cls(model, precision, ffi, lib)
        return cls._cache[key]

    def __init__(self, model: str, precision: str, ffi, lib):
        self.model, self.precision, self.ffi, self.lib = model, precision, ffi, lib
        self.dtype = check_precision(precision)
        self.real = "float" if precision == "f32" else "double"
        # The C prefix is the model's C name (extract/ir/names.py: model_NAME)
        prefix = f"{_names().c_model(model)}_"
        if not hasattr(lib, prefix + "batch_grad"):
            raise KernelsUnavailable(f"library has no {prefix}batch_grad")
        self.prefix = prefix
        self.inputs = self._layout("inputs")
        self.params = self._layout("params")
        self.values = self._layout("values")
        self.inputs_size = ffi.sizeof(self.type("inputs")) // self.dtype.itemsize
        self.params_size = ffi.sizeof(self.type("params")) // self.dtype.itemsize
        r = ffi.typeof(f"{self.real}[1]").item
        if ffi.sizeof(r) != self.dtype.itemsize:
            raise KernelsUnavailable(f"C {self.real} is not {self.dtype.itemsize} bytes")

    def type(self, bundle: str) -> str:
        return f"{self.prefix}{bundle}"

    def fn(self, name: str):
        return getattr(self.lib, self.prefix + name)

    def _layout(self, bundle: str) -> dict[str, Field]:
        t = self.ffi.typeof(self.type(bundle))
        size = self.dtype.itemsize
        out = {}
        for name, f in t.fields:
            if f.offset % size or f.type.kind != "array":
                raise KernelsUnavailable(f"unexpected layout of {self.type(bundle)}.{name}")
            # by the user's name (extract/ir/names.py); ``empty_``, an empty bundle's placeholder
            user = _names().user_array(name) or name
            out[user] = Field(f.offset // size, f.type.length)
        return out

    def new(self, bundle: str, n: int | None = None):
        """Zeroed C storage for one bundle, or an array of ``n`` of them."""
        t = self.type(bundle)
        return self.ffi.new(f"{t} *") if n is None else self.ffi.new(f"{t}[{n}]")

    def view(self, cdata, width: int) -> np.ndarray:
        """A zero-copy NumPy view of C storage as rows of ``width`` reals."""
        flat = np.frombuffer(self.ffi.buffer(cdata), dtype=self.dtype)
        return flat.reshape(-1, width)

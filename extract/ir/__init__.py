"""The two IRs: the dump's expression tree and the loop IR the passes rewrite.

In: the dump's JSON text or data. Out: an ``ir.Model`` (``dump.parse``; any problem is one
``DumpError`` naming the JSON path). Modules: ``dump.py`` (check the dump, build the IR),
``ir.py`` (frozen dataclasses for the dump's nodes; ``show``, ``dump_tree``), ``code.py`` (the
loop IR: affine indices, scalar expressions, statements). Imports only the bottom
(``extract/paths.py``, ``extract/limits.py``).

Until the next release, ``extract.ir``'s other attributes are ``extract.ir.ir``'s, with a
``DeprecationWarning``: ``extract.ir`` was that module before the stages had folders.
"""
import importlib as _importlib
import warnings as _warnings


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    module = _importlib.import_module("extract.ir.ir")
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'extract.ir' has no attribute {name!r}") from None
    _warnings.warn(f"extract.ir.{name} is deprecated: the dump IR is extract.ir.ir "
                   f"(from extract.ir import ir; ir.{name})", DeprecationWarning, stacklevel=2)
    return value

"""Render: the dump IR → the model as mathematics (MathML in one HTML page, or LaTeX).

In: an ``ir.Model``. Out: text (``render.write``; ``python -m extract MODEL --html``). Modules:
``render.py`` (the math tree from the IR), ``render_math.py`` (index and math nodes),
``render_print.py`` (MathML and LaTeX printers). Reads ``extract.ir`` only.

Until the next release, ``extract.render``'s other attributes are ``extract.render.render``'s,
with a ``DeprecationWarning``: ``extract.render`` was that module before the stages had
folders.
"""
import importlib as _importlib
import warnings as _warnings


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    module = _importlib.import_module("extract.render.render")
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'extract.render' has no attribute {name!r}") from None
    _warnings.warn(f"extract.render.{name} is deprecated: the renderer is "
                   f"extract.render.render (from extract.render import render; "
                   f"render.{name})", DeprecationWarning, stacklevel=2)
    return value

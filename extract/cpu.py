"""Deprecated alias of ``extract.emit.cpu`` (issue #36), kept for one release.

Importing ``extract.cpu`` warns and puts ``extract.emit.cpu`` in its place in ``sys.modules``:
every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.cpu is deprecated: import extract.emit.cpu",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.emit.cpu")

"""Deprecated alias of ``extract.emit.sources`` (issue #36), kept for one release.

Importing ``extract.sources`` warns and puts ``extract.emit.sources`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.sources is deprecated: import extract.emit.sources",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.emit.sources")

"""Deprecated alias of ``extract.emit.build`` (issue #36), kept for one release.

Importing ``extract.build`` warns and puts ``extract.emit.build`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.build is deprecated: import extract.emit.build",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.emit.build")

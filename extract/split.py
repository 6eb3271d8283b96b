"""Deprecated alias of ``extract.passes.split`` (issue #36), kept for one release.

Importing ``extract.split`` warns and puts ``extract.passes.split`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.split is deprecated: import extract.passes.split",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.split")

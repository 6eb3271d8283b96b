"""Deprecated alias of ``extract.passes.lower`` (issue #36), kept for one release.

Importing ``extract.lower`` warns and puts ``extract.passes.lower`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.lower is deprecated: import extract.passes.lower",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.lower")

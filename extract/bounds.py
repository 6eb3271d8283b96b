"""Deprecated alias of ``extract.passes.bounds`` (issue #36), kept for one release.

Importing ``extract.bounds`` warns and puts ``extract.passes.bounds`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.bounds is deprecated: import extract.passes.bounds",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.bounds")

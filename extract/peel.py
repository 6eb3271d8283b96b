"""Deprecated alias of ``extract.passes.peel`` (issue #36), kept for one release.

Importing ``extract.peel`` warns and puts ``extract.passes.peel`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.peel is deprecated: import extract.passes.peel",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.peel")

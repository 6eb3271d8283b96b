"""Deprecated alias of ``extract.passes.inline`` (issue #36), kept for one release.

Importing ``extract.inline`` warns and puts ``extract.passes.inline`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.inline is deprecated: import extract.passes.inline",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.inline")

"""Deprecated alias of ``extract.passes.lanes`` (issue #36), kept for one release.

Importing ``extract.lanes`` warns and puts ``extract.passes.lanes`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.lanes is deprecated: import extract.passes.lanes",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.lanes")

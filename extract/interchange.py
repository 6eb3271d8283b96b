"""Deprecated alias of ``extract.passes.interchange`` (issue #36), kept for one release.

Importing ``extract.interchange`` warns and puts ``extract.passes.interchange`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.interchange is deprecated: import extract.passes.interchange",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.interchange")

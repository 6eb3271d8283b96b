"""Deprecated alias of ``extract.passes.divide`` (issue #36), kept for one release.

Importing ``extract.divide`` warns and puts ``extract.passes.divide`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.divide is deprecated: import extract.passes.divide",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.divide")

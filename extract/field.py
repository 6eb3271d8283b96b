"""Deprecated alias of ``extract.check.field`` (issue #36), kept for one release.

Importing ``extract.field`` warns and puts ``extract.check.field`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.field is deprecated: import extract.check.field",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.check.field")

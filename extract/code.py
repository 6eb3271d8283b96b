"""Deprecated alias of ``extract.ir.code`` (issue #36), kept for one release.

Importing ``extract.code`` warns and puts ``extract.ir.code`` in its place in ``sys.modules``:
every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.code is deprecated: import extract.ir.code",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.ir.code")

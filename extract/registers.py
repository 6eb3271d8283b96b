"""Deprecated alias of ``extract.passes.registers`` (issue #36), kept for one release.

Importing ``extract.registers`` warns and puts ``extract.passes.registers`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.registers is deprecated: import extract.passes.registers",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.registers")

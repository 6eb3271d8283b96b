"""Deprecated alias of ``extract.passes.winograd`` (issue #36), kept for one release.

Importing ``extract.winograd`` warns and puts ``extract.passes.winograd`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.winograd is deprecated: import extract.passes.winograd",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.passes.winograd")

"""Deprecated alias of ``extract.front.frontend`` (issue #36), kept for one release.

Importing ``extract.frontend`` warns and puts ``extract.front.frontend`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.frontend is deprecated: import extract.front.frontend",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.front.frontend")

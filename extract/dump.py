"""Deprecated alias of ``extract.ir.dump`` (issue #36), kept for one release.

Importing ``extract.dump`` warns and puts ``extract.ir.dump`` in its place in ``sys.modules``:
every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.dump is deprecated: import extract.ir.dump",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module("extract.ir.dump")

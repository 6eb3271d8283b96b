"""Deprecated alias of ``extract.check.validate`` (issue #36), kept for one release.

Importing ``extract.validate`` warns and puts ``extract.check.validate`` in its place in
``sys.modules``: every name (private ones too) and every monkeypatch reaches the real module.
"""
import importlib
import sys
import warnings

warnings.warn("extract.validate is deprecated: import extract.check.validate",
              DeprecationWarning, stacklevel=1 if __name__ == "__main__" else 2)
if __name__ == "__main__":   # python -m extract.validate DIR
    sys.exit(importlib.import_module("extract.check.validate").main())
sys.modules[__name__] = importlib.import_module("extract.check.validate")

"""Build hook: ship the files the packages read at run time inside the packages.

The metadata is in pyproject.toml; this file only adds a ``build_py`` step. ``extract`` and
``runtime`` read files that live outside them in the source checkout (the JSON Schema, the
bundled MNIST subset) and, when ``make dump`` has run, the built-in dumps and the Agda
executable. When a wheel is built (``pip install .``, ``python -m build``), this step copies
them into the build tree, so the installed packages hold them (the templates,
``extract/emit/templates``, are package data, listed in pyproject.toml):

    docs/dump-format.schema.json   -> extract/_schema/dump-format.schema.json
    data/mnist/*, data/README.md   -> runtime/_data/mnist/*, runtime/_data/README.md
    build/dump/*.json              -> extract/_dumps/*.json      (only if make dump has run)
    build/dump/zoo/*.json          -> extract/_dumps/zoo/*.json  (the zoo's, likewise)
    build/agda/Main                -> extract/_agda/Main         (only if make dump has run)

Nothing is copied into the source tree (an editable install, ``pip install -e .``, reads the
checkout's own files), and nothing is a symlink. ``extract.paths.locate`` finds each file:
``$PROVED_KERNELS_DUMPS`` / ``$PROVED_KERNELS_AGDA`` first (dumps, Agda), then the copy in the
package, then the checkout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent

# (path in the checkout, path in the build tree, glob for directories, required)
RESOURCES = [
    ("docs/dump-format.schema.json", "extract/_schema/dump-format.schema.json", None, False),
    ("data/mnist", "runtime/_data/mnist", "*", True),
    ("data/README.md", "runtime/_data/README.md", None, False),
    ("build/dump", "extract/_dumps", "*.json", False),
    ("build/dump/zoo", "extract/_dumps/zoo", "*.json", False),
    ("build/agda/Main", "extract/_agda/Main", None, False),
]


def _resource_files(src: Path, dst: Path, pattern: str | None) -> list[tuple[Path, Path]]:
    if pattern is None:
        return [(src, dst)] if src.is_file() else []
    if not src.is_dir():
        return []
    return [(p, dst / p.relative_to(src)) for p in sorted(src.glob(pattern)) if p.is_file()]


class build_py_with_resources(build_py):
    """``build_py``, then the resources above copied into ``build_lib``."""

    def _copies(self) -> list[tuple[Path, Path]]:
        if getattr(self, "editable_mode", False):
            return []  # an editable install reads the checkout (extract.build.locate)
        out = []
        for src, dst, pattern, required in RESOURCES:
            files = _resource_files(HERE / src, Path(self.build_lib) / dst, pattern)
            if required and not files:
                raise FileNotFoundError(f"setup.py: {src} is missing from the source tree")
            out += files
        return out

    def run(self):
        super().run()
        copies = self._copies()
        for _, dst, _, _ in RESOURCES:  # no stale files from an earlier build
            target = Path(self.build_lib) / dst
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        for src, dst in copies:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)  # keeps the executable bit of the Agda program

    def get_outputs(self, include_bytecode=True):
        return list(super().get_outputs(include_bytecode)) + [str(d) for _, d in self._copies()]


setup(
    cmdclass={"build_py": build_py_with_resources},
    # setuptools' own build tree, apart from the Agda build (build/agda) and dumps (build/dump)
    options={"build": {"build_base": "build/setuptools"}},
)

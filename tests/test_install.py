"""Packaging: ``pip install .`` and ``pip install -e .`` give working ``runtime`` and ``extract``
from any directory, with the templates, the bundled MNIST subset, the built-in dumps and the
Agda executable found by ``extract.emit.build.locate`` (environment, then package, then checkout).

The install tests copy the checkout (without .git and build products other than the dumps and
the Agda executable) into a temporary directory and install that copy into a fresh venv made
with ``--system-site-packages`` (numpy, cffi, ... come from this Python) and ``--no-deps
--no-build-isolation`` (no network); the venv's Python then runs from another directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from extract.emit import build
from extract import paths
from test_runtime_cdouble import generated_dump

ROOT = Path(__file__).resolve().parent.parent
SKIP = {".git", ".pytest_cache", ".venv", "out", "__pycache__"}
SKIP_PATHS = {"build/agda/MAlonzo", "build/setuptools", "build/gen", "build/lib"}


# -- the lookup order (no install) -------------------------------------------------------------


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """A fake installed package dir and a fake checkout, with no environment overrides."""
    pkg = tmp_path / "site" / "extract"
    root = tmp_path / "checkout"
    pkg.mkdir(parents=True)
    root.mkdir()
    for mod in (build, paths):                       # paths: where locate looks
        monkeypatch.setattr(mod, "PACKAGE", pkg)
        monkeypatch.setattr(mod, "ROOT", root)
    monkeypatch.delenv(build.ENV_DUMPS, raising=False)
    monkeypatch.delenv(build.ENV_AGDA, raising=False)
    return pkg, root


def _touch(path: Path, text: str = "{}") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_lookup_prefers_environment_then_package_then_checkout(layout, tmp_path, monkeypatch):
    pkg, root = layout
    # nothing anywhere: the checkout's path (which does not exist)
    assert build.dump_path("cnn", make=False) == root / "build" / "dump" / "cnn.json"
    assert build.agda_main() == root / "build" / "agda" / "Main"
    assert build.locate("templates") == root / "extract" / "emit" / "templates"
    # the checkout
    in_checkout = _touch(root / "build" / "dump" / "cnn.json")
    agda_checkout = _touch(root / "build" / "agda" / "Main", "")
    (root / "extract" / "emit" / "templates").mkdir(parents=True)
    _touch(root / "data" / "mnist" / "x")
    assert build.dump_path("cnn") == in_checkout and build.agda_main() == agda_checkout
    assert build.locate("mnist") == root / "data" / "mnist"
    # the package wins over the checkout
    in_pkg = _touch(pkg / "_dumps" / "cnn.json")
    agda_pkg = _touch(pkg / "_agda" / "Main", "")
    (pkg / "emit" / "templates").mkdir(parents=True)
    _touch(pkg.parent / "runtime" / "_data" / "mnist" / "x")
    assert build.dump_path("cnn") == in_pkg and build.agda_main() == agda_pkg
    assert build.locate("templates") == pkg / "emit" / "templates"
    assert build.locate("mnist") == pkg.parent / "runtime" / "_data" / "mnist"
    # the environment wins over both, file by file for the dumps
    env_dumps = tmp_path / "mine"
    mine = _touch(env_dumps / "mine.json")
    monkeypatch.setenv(build.ENV_DUMPS, str(env_dumps))
    assert build.dump_path("mine") == mine
    assert build.dump_path("cnn") == in_pkg  # not in $PROVED_KERNELS_DUMPS: the next place
    _touch(root / "build" / "dump" / "dot.json")
    assert build.builtin_models() == ["cnn", "dot", "mine"]
    # the zoo's dumps (make dump: models/NAME.model -> build/dump/zoo/NAME.json) by name,
    # after the built-in ones: cnn stays the spec's own
    zoo = _touch(root / "build" / "dump" / "zoo" / "lenet5.json")
    _touch(pkg / "_dumps" / "zoo" / "cnn.json")
    assert build.dump_path("lenet5") == zoo and build.dump_path("cnn") == in_pkg
    assert build.builtin_models() == ["cnn", "dot", "lenet5", "mine"]
    with pytest.raises(ValueError, match="unknown model 'lenet6'.*lenet5"):
        build.dump_path("lenet6")
    agda_env = _touch(tmp_path / "agda" / "Main", "")
    monkeypatch.setenv(build.ENV_AGDA, str(agda_env))
    assert build.agda_main() == agda_env


def test_make_dump_that_makes_a_zoo_dump_finds_it(layout):
    """A zoo name on a checkout without dumps: ``make dump`` runs and its zoo dump is found
    the first time; once models/NAME.model is newer than its dump, a warning says so."""
    pkg, root = layout
    (root / "Spec").mkdir()
    (root / "Makefile").write_text("dump:\n\tmkdir -p build/dump/zoo && "
                                   "echo '{}' > build/dump/zoo/newz.json\n")
    zoo = root / "build" / "dump" / "zoo" / "newz.json"
    assert build.dump_path("newz") == zoo
    _touch(root / "models" / "newz.model", "model newz")
    os.utime(zoo, (1, 1))
    with pytest.warns(UserWarning, match="newz.model is newer than its dump"):
        assert build.dump_path("newz") == zoo


def test_missing_dump_outside_a_checkout_says_make_dump(layout):
    pkg, root = layout  # no Makefile in the fake checkout: no `make` is run
    with pytest.raises(FileNotFoundError, match="no dump of model 'cnn'.*make dump.*not a "
                                                "source checkout"):
        build.dump_path("cnn")


def test_runtime_default_data_and_templates_point_at_this_checkout():
    import extract.emit.sources
    import runtime

    assert runtime.DEFAULT_DATA == ROOT / "data" / "mnist"
    assert extract.emit.sources.TEMPLATES == ROOT / "extract" / "emit" / "templates"


# -- real installs --------------------------------------------------------------------------------


def _copy_checkout(dest: Path) -> Path:
    def ignore(directory, names):
        rel = Path(directory).relative_to(ROOT)
        return {n for n in names if n in SKIP or n.endswith(".egg-info")
                or (rel / n).as_posix() in SKIP_PATHS}

    shutil.copytree(ROOT, dest, ignore=ignore, symlinks=True)
    return dest


def _run(cmd, cwd, env, timeout=600):
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=timeout)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


CHECK = r"""
import json, sys
import numpy as np
import extract.emit.build, extract.emit.sources, runtime
m = runtime.load("cnn")
x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 5)
print(json.dumps({
    "runtime": runtime.__file__, "extract": extract.emit.build.__file__,
    "data": str(runtime.DEFAULT_DATA), "templates": str(extract.emit.sources.TEMPLATES),
    "dump": str(m.dump), "agda": str(extract.emit.build.agda_main()),
    "zoo": str(extract.emit.build.dump_path("mlp", make=False)),
    "labels": y.tolist(), "prediction": m.predict(x).tolist(),
}))
"""


@pytest.mark.parametrize("editable", [False, True], ids=["install", "editable"])
def test_pip_install_works_from_any_directory(tmp_path, kernel_cache, editable):
    src = _copy_checkout(tmp_path / "src")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv],
         tmp_path, os.environ)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", build.ENV_DUMPS, build.ENV_AGDA)}
    env.update(PYTHONNOUSERSITE="1", PROVED_KERNELS_CACHE=str(kernel_cache),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    built = (ROOT / "build" / "dump" / "cnn.json").exists()
    if not built:  # `make dump` has not run: the hand-written CNN dump, through the environment
        dumps = tmp_path / "dumps"
        dumps.mkdir()
        shutil.copy(generated_dump(), dumps / "cnn.json")
        env[build.ENV_DUMPS] = str(dumps)
    # the venv has no pip of its own: this Python's pip (a system site package) installs into it
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
          *(["-e"] if editable else []), "."], src, env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    got = json.loads(_run([py, "-c", CHECK], elsewhere, env).stdout.splitlines()[-1])
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     elsewhere, env).stdout.strip())
    if editable:  # the copy's own files, read in place
        where = {"runtime": src / "runtime" / "__init__.py", "extract": src / "extract" /
                 "emit" / "build.py", "data": src / "data" / "mnist",
                 "templates": src / "extract" / "emit" / "templates",
                 "dump": src / "build" / "dump" / "cnn.json", "agda": src / "build" / "agda" /
                 "Main"}
    else:  # the package data, and the copies made by setup.py inside the installed packages
        where = {"runtime": site / "runtime" / "__init__.py", "extract": site / "extract" /
                 "emit" / "build.py", "data": site / "runtime" / "_data" / "mnist",
                 "templates": site / "extract" / "emit" / "templates",
                 "dump": site / "extract" / "_dumps" / "cnn.json",
                 "agda": site / "extract" / "_agda" / "Main"}
        assert (site / "runtime" / "_data" / "README.md").is_file()  # MNIST's licence notice
        assert (site / "extract" / "_schema" / "dump-format.schema.json").is_file()
        for t in ("banner.j2", "c/model.c.j2", "cuda/model.cu.j2", "validate/field.h",
                  "cuda_host/cuda_host.h"):  # the templates, package data of extract.emit
            assert (site / "extract" / "emit" / "templates" / t).is_file(), t
        if (ROOT / "build" / "agda" / "Main").exists():
            assert os.access(site / "extract" / "_agda" / "Main", os.X_OK)
    if not built:
        where["dump"] = dumps / "cnn.json"
    if (ROOT / "build" / "dump" / "zoo" / "mlp.json").exists():  # the zoo, by name
        where["zoo"] = (src / "build" / "dump" / "zoo" if editable
                        else site / "extract" / "_dumps" / "zoo") / "mlp.json"
    for key, path in where.items():
        if key == "agda" and not (ROOT / "build" / "agda" / "Main").exists():
            continue
        assert Path(got[key]) == path.resolve(), key
    assert not (src / "extract" / "_schema").exists()  # nothing copied into the source tree

    import runtime  # the same predictions as this checkout's, from the same dump

    x, y = runtime.load_mnist(runtime.DEFAULT_DATA, "test", 5)
    assert got["labels"] == y.tolist()
    np.testing.assert_allclose(got["prediction"], runtime.load(generated_dump()).predict(x),
                               rtol=1e-6)

    # the command lines, from another directory
    assert "usage: python -m extract" in _run([py, "-m", "extract", "--help"], elsewhere,
                                              env).stdout
    _run([py, "-m", "runtime", "train", "cnn", "--epochs", "0", "--train-limit", "10",
          "--test-limit", "5", "--no-progress"], elsewhere, env)
    assert (elsewhere / "out" / "cnn" / "weights.npz").is_file()
    res = _run([py, "-m", "runtime", "predict", "cnn", "--weights",
                elsewhere / "out" / "cnn" / "weights.npz", "--limit", "5"], elsewhere, env)
    assert res.stdout.startswith("accuracy ")
    if "zoo" in where:
        _run([py, "-m", "runtime", "train", "mlp", "--epochs", "0", "--train-limit", "10",
              "--test-limit", "5", "--no-progress"], elsewhere, env)
        assert (elsewhere / "out" / "mlp" / "weights.npz").is_file()

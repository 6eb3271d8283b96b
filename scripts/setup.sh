#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine; a no-op when it is all there.
#   scripts/setup.sh          the main job: Agda + stdlib + GHC, and the Python package
#   scripts/setup.sh --test   also the test and benchmark dependencies (pytest, pytest-xdist,
#                             torch 2.13.0 CPU, onnx 1.23.1, onnxruntime 1.32.0 and the ONNX
#                             model zoo's MNIST network)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

SUDO=""
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then SUDO=sudo; fi

apt_pkgs=()
command -v agda >/dev/null || apt_pkgs+=(agda-bin)
[[ -d /usr/share/agda-stdlib ]] || apt_pkgs+=(agda-stdlib)
command -v ghc >/dev/null || apt_pkgs+=(ghc)
dpkg -s libghc-ieee754-dev >/dev/null 2>&1 || apt_pkgs+=(libghc-ieee754-dev)
command -v gcc >/dev/null || apt_pkgs+=(gcc)
if ((${#apt_pkgs[@]})); then
  echo "setup: apt-get install ${apt_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
py_missing=$($PY - <<'PYEOF'
import importlib.util as u
mods = {"numpy": "numpy", "jinja2": "jinja2", "cffi": "cffi", "jsonschema": "jsonschema",
        "pygments": "pygments", "filelock": "filelock", "platformdirs": "platformdirs",
        "tqdm": "tqdm", "matplotlib": "matplotlib"}
print(" ".join(p for m, p in mods.items() if u.find_spec(m) is None))
PYEOF
)
if [[ -n "$py_missing" ]]; then
  echo "setup: pip install $py_missing"
  $PY -m pip install -q $py_missing
fi
# the package itself, editable, so that `import runtime` and `python -m extract` work from any
# directory and find the dumps that `make dump` writes later; (re)installed when it is missing
# or installed from another checkout
here=$(pwd -P)
installed=$(cd / && $PY -c "import os, runtime; print(os.path.dirname(os.path.dirname(os.path.realpath(runtime.__file__))))" 2>/dev/null || true)
if [[ "$installed" != "$here" ]]; then
  # --no-build-isolation builds with the setuptools already here; before setuptools 70.1 its
  # editable (PEP 660) build needs the `wheel` package, which a fresh Python may not have
  if ! $PY -c "import wheel" 2>/dev/null && $PY -c "import setuptools as s, sys; \
      sys.exit(tuple(int(x) for x in s.__version__.split('.')[:2]) >= (70, 1))"; then
    $PY -m pip install -q wheel
  fi
  echo "setup: pip install -e . (was: ${installed:-not installed})"
  $PY -m pip install -q --no-deps --no-build-isolation -e .
fi
if ((want_test)); then
  # clang: the generated C must be warning-free under it too; g++: extract.check.validate and the
  # CUDA host emulation compile the generated sources as C++ (tests/test_extract_build.py,
  # tests/test_validate.py, tests/test_cuda_host.py)
  test_pkgs=()
  command -v clang >/dev/null || test_pkgs+=(clang)
  command -v g++ >/dev/null || test_pkgs+=(g++)
  # chromium (Debian's package), headless: renders the model's math page (tests/test_render.py,
  # which skips without it, saying so); not where apt has no such package (the package lists
  # are refreshed first, so that a machine with stale lists still finds it)
  export DEBIAN_FRONTEND=noninteractive
  updated=0
  if ! command -v chromium >/dev/null; then
    $SUDO apt-get update -qq && updated=1
    # (the policy is read whole first: under pipefail, `grep -q` closing the pipe early can
    # fail the pipeline with apt-cache's SIGPIPE and skip chromium at random)
    policy=$(apt-cache policy chromium 2>/dev/null || true)
    if grep -q 'Candidate: [0-9]' <<<"$policy"; then
      test_pkgs+=(chromium)
    fi
  fi
  if ((${#test_pkgs[@]})); then
    echo "setup: apt-get install ${test_pkgs[*]}"
    ((updated)) || $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${test_pkgs[@]}" >/dev/null
  fi
  $PY -c "import pytest" 2>/dev/null || $PY -m pip install -q pytest
  # pytest-xdist: `make test` runs the tests on every core (pytest -n auto)
  $PY -c "import xdist" 2>/dev/null || $PY -m pip install -q "pytest-xdist>=3.2"
  $PY -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null \
    || $PY -m pip install -q torch==2.13.0
  # ONNX import (tests/test_onnx.py): the onnx package (its backend test cases are built with
  # its own loader), and the ONNX model zoo's MNIST network as the qonnx wheel ships it (the
  # wheel is only unpacked: none of qonnx's dependencies is installed)
  $PY -c "import onnx, sys; sys.exit(onnx.__version__ != '1.23.1')" 2>/dev/null \
    || $PY -m pip install -q onnx==1.23.1
  # onnxruntime: the second reference of the ONNX tests (tests/test_onnx_ops.py, the zoo's)
  $PY -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '1.32.0')" 2>/dev/null \
    || $PY -m pip install -q onnxruntime==1.32.0
  if [[ ! -f build/onnx/mnist-conv/model.onnx ]]; then
    echo "setup: pip download --no-deps qonnx==1.0.0 (the ONNX model zoo's mnist-conv)"
    rm -rf build/onnx/.wheel && mkdir -p build/onnx/.wheel
    $PY -m pip download -q --no-deps qonnx==1.0.0 -d build/onnx/.wheel
    $PY - <<'PYEOF'
import glob, os, shutil, zipfile
whl = glob.glob("build/onnx/.wheel/qonnx-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    for n in z.namelist():
        if n.startswith("qonnx/data/onnx/mnist-conv/") and not n.endswith("/"):
            dst = os.path.join("build/onnx/mnist-conv", n[len("qonnx/data/onnx/mnist-conv/"):])
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with z.open(n) as src, open(dst + ".tmp", "wb") as out:
                shutil.copyfileobj(src, out)
            os.replace(dst + ".tmp", dst)
shutil.rmtree("build/onnx/.wheel")
PYEOF
  fi
fi
echo "setup: ok ($(agda --version | head -1), $($PY --version), gcc $(gcc -dumpversion))"

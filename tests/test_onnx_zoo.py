"""The nine architectures ``onnx`` ships (``backend/test/data/light/``: AlexNet, DenseNet-121,
Inception v1 and v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512) through the ONNX
importer (tests/onnx_zoo.py has the harness).

- ``test_an_architecture_imports_and_elaborates`` (``agda``; in ``make test``): the importer
  writes the model file and Agda elaborates it (every shape checked), no C is built. VGG-19's
  143.7 M parameters are past 2^31 − 1 over 16 lanes in all, not in any one array's offsets:
  its C indexes with int throughout (extract/emit/printer.py), and its dump parses.
- ``test_an_architecture_agrees_with_onnxruntime`` (``slow``): also builds the C (minutes of
  gcc each: ResNet-50's 2-3) and runs one random image, with random weights, against
  onnxruntime, 1e-4 relative to the largest output; then the same build with the shipped
  weights (read from the ConstantOfShape nodes) against the shipped ``*_output_0.pb`` (the same
  for every input, as each weight is one value repeated), 1e-5. It runs when ``PK_TEST_ZOO=1``: ``make
  test`` runs every test, slow ones included, and this one alone would take it past half an
  hour on two cores. VGG-19's batch kernels take 7 GB of workspace a thread at 8 lanes (the
  parameter gradients of 8 samples), of which a prediction touches about 1 GB
  (runtime.Model._workspace); where even that does not fit, predictions run one sample at a
  time (tests/test_sizes.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx_zoo  # noqa: E402

pytestmark = pytest.mark.agda



@pytest.mark.parametrize("name", onnx_zoo.ARCHITECTURES)
def test_an_architecture_imports_and_elaborates(name):
    import onnx
    from extract.front import frontend
    from extract.front.onnx import import_onnx
    imp = import_onnx(onnx.load(str(onnx_zoo.light(name))))
    assert imp.batch and 1000 in imp.output_shape, imp.output_shape
    frontend.compile_model(imp.text, name_hint=f"{imp.name}.model")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("PK_TEST_ZOO"),
                    reason="builds a whole ImageNet network's C (minutes of gcc each): "
                           "PK_TEST_ZOO=1 runs it")
@pytest.mark.parametrize("name", onnx_zoo.ARCHITECTURES)
def test_an_architecture_agrees_with_onnxruntime(name, kernel_cache):
    pytest.importorskip("onnxruntime")
    over_largest, _ = onnx_zoo.check(name, log=lambda s: None)
    assert over_largest <= 1e-4

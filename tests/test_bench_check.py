"""The benchmark's agreement check accepts agreeing implementations and refuses others."""

import numpy as np
import pytest

from bench.check import REL_TOL, Perturbed, compare, probe
from bench.model import param_slices, synthetic


@pytest.fixture(scope="module")
def xs():
    return synthetic(60, seed=1)


@pytest.fixture(scope="module")
def hw():
    from bench.handwritten import HandwrittenC
    return HandwrittenC()


@pytest.fixture(scope="module")
def ref_probe(hw, xs):
    hw.set_threads(1)
    return probe(hw, xs, batch=20)


class SwapK1Channels:
    """A plausible kernel bug: the gradients of two output channels of k1 swapped."""

    def __init__(self, impl):
        self.impl, self.name = impl, "swapped"

    def __getattr__(self, a):
        return getattr(self.impl, a)

    def batch_grad(self, w, xs):
        loss, g = self.impl.batch_grad(w, xs)
        k1 = g[param_slices()["k1"]].reshape(6, 25)
        k1[[0, 1]] = k1[[1, 0]]
        return loss, g


def test_agreeing_implementations_pass(hw, xs, ref_probe):
    hw.set_threads(2)
    a = compare({"ref": ref_probe, "two-threads": probe(hw, xs, batch=20)})
    assert a.ok, a.table()
    assert 0 <= a.worst()["two-threads"] < REL_TOL
    # every parameter of every probe, the training run and the predictions are compared
    quantities = {r.quantity for r in a.rows}
    assert {"grad[2].k2", "train losses", "trained fc", "predictions"} <= quantities


@pytest.mark.parametrize("rel", [1e-3, -3e-4])
def test_perturbed_implementation_is_refused(hw, xs, ref_probe, rel):
    hw.set_threads(1)
    a = compare({"ref": ref_probe, "bad": probe(Perturbed(hw, rel), xs, batch=20)})
    assert not a.ok
    assert {r.impl for r in a.failures()} == {"bad"}
    assert "**NO**" in a.table()


def test_perturbation_below_rounding_passes(hw, xs, ref_probe):
    hw.set_threads(1)
    assert compare({"ref": ref_probe, "ok": probe(Perturbed(hw, 1e-6), xs, batch=20)}).ok


def test_symmetry_breaking_weights_catch_swapped_channels(hw, xs, ref_probe):
    hw.set_threads(1)
    a = compare({"ref": ref_probe, "swapped": probe(SwapK1Channels(hw), xs, batch=20)})
    assert not a.ok
    failed = {r.quantity for r in a.failures()}
    # invisible at the constant initial weights (all channels alike), caught at jittered ones
    assert "grad[0].k1" not in failed and "grad[1].k1" in failed


def test_nan_is_refused(ref_probe):
    import copy
    bad = copy.deepcopy(ref_probe)
    bad["predict"][3] = float("nan")
    a = compare({"ref": ref_probe, "nan": bad})
    assert [r.quantity for r in a.failures()] == ["predictions"]


def test_probe_needs_enough_data(hw):
    with pytest.raises(ValueError):
        probe(hw, synthetic(10), batch=20)


def test_report_lists_the_reference(ref_probe):
    a = compare({"only": ref_probe})
    assert a.ok and a.rows == () and a.reference == "only"
    assert np.isfinite(a.to_json()["tolerance"])

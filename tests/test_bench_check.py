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


def _noisy(p: dict, rel: float, seed: int = 0) -> dict:
    """``p`` with every gradient probe moved by noise of normwise size ``rel`` per
    parameter (a float32 rounding of another summation order, exaggerated)."""
    import copy
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(p)
    for g in out["grad"]:
        a = np.asarray(g["grad"], np.float64)
        for sl in param_slices().values():
            noise = rng.standard_normal(sl.stop - sl.start)
            a[sl] += rel * np.linalg.norm(a[sl]) * noise / np.linalg.norm(noise)
        g["grad"] = a.tolist()
    return out


def test_the_float64_arbiter_explains_rounding_and_nothing_else(hw, xs, ref_probe):
    """A difference past the tolerance that both float32 results share with float64 (here
    the reference's own probes stand in for float64) is rounding: explained. A wrong kernel
    (swapped channels) or a peer off float64 by more than the slack is not; nor is a
    difference in what the arbiter does not evaluate (the training run)."""
    from bench.check import ARBITER_SLACK, arbitrate
    exact = ref_probe["grad"]
    rounded = _noisy(ref_probe, 5e-4)
    a = compare({"ref": ref_probe, "peer": rounded})
    assert not a.ok
    settled = arbitrate(a, {"ref": ref_probe, "peer": rounded}, exact)
    assert settled.ok, settled.table()
    assert any(r.explained for r in settled.rows) and "float32 roundings" in settled.table()
    far = _noisy(ref_probe, 3 * ARBITER_SLACK * REL_TOL)
    b = compare({"ref": ref_probe, "far": far})
    assert not arbitrate(b, {"ref": ref_probe, "far": far}, exact).ok
    hw.set_threads(1)
    swapped = probe(SwapK1Channels(hw), xs, batch=20)
    c = compare({"ref": ref_probe, "swapped": swapped})
    settled = arbitrate(c, {"ref": ref_probe, "swapped": swapped}, exact)
    assert "grad[1].k1" in {r.quantity for r in settled.failures()}
    import copy
    trained = copy.deepcopy(rounded)
    trained["train"]["losses"] = [x * (1 + 1e-3) for x in trained["train"]["losses"]]
    d = arbitrate(compare({"ref": ref_probe, "t": trained}), {"ref": ref_probe, "t": trained},
                  exact)
    assert [r.quantity for r in d.failures()] == ["train losses"]

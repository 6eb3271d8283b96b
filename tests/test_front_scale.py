"""The front end at size: a model of many bindings, many names and shadowed index names is
elaborated by ``build/agda/Main model -`` (names resolved through Spec/Front/Names.agda's trie,
variables as indices: Spec/Lang/Syntax.agda), and its dump means what the model says: the
forward values and every gradient, evaluated by the independent NumPy oracle
(``tests/oracle.py``), equal a direct NumPy computation of the same model in float64.

No time is asserted here (``python -m bench.scale`` measures the growth); what is checked is
that every name, however far up, resolves to its own variable: a wrong level or index shows up
as a wrong value or gradient.
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import oracle
from conftest import spec_main

pytestmark = pytest.mark.agda

N = 600          # bindings
K = 7            # parameters, each read by every K-th binding


def model_text() -> str:
    """h0 = x * w0; h_i = relu(h_{i-1}) * w_{i mod K} + x (+ h_{i-7}: a skip connection),
    with a binding that shadows an index name in a nested binder, and a loss reading h_{N-1}
    and a binding from far up (h3)."""
    lines = ["model scale", "input x : 16", "target y : 16"]
    lines += [f"param w{k} : 16" for k in range(K)]
    lines.append("h0 = x * w0")
    for i in range(1, N):
        skip = f" + h{i - 7}" if i >= 7 and i % 5 == 0 else ""
        lines.append(f"h{i} = relu(h{i - 1}) * w{i % K} + x{skip}")
    # the inner i shadows the outer one: s[i] = sum over the inner i of h3[i] * w1[i]
    lines.append("s = for i : 16 . sum i : 16 . h3[i] * w1[i]")
    lines.append(f"loss l = sqerr(h{N - 1} + s, y)")
    return "\n".join(lines) + "\n"


def numpy_model(x, y, ws):
    """The loss and its gradients in NumPy (reverse mode written out by hand)."""
    hs = [x * ws[0]]
    for i in range(1, N):
        h = np.maximum(hs[-1], 0) * ws[i % K] + x
        if i >= 7 and i % 5 == 0:
            h = h + hs[i - 7]
        hs.append(h)
    s = np.full(16, np.sum(hs[3] * ws[1]))
    r = hs[-1] + s - y
    loss = 0.5 * np.sum(r * r)
    dh = [np.zeros(16) for _ in range(N)]
    dw = [np.zeros(16) for _ in range(K)]
    dx = np.zeros(16)
    dh[-1] += r
    ds = r.sum()                              # every s[i] is the same sum
    dh[3] += ds * ws[1]
    dw[1] += ds * hs[3]
    for i in range(N - 1, 0, -1):
        g = dh[i]
        if i >= 7 and i % 5 == 0:
            dh[i - 7] += g
        dx += g
        dw[i % K] += g * np.maximum(hs[i - 1], 0)
        dh[i - 1] += g * ws[i % K] * (hs[i - 1] > 0)
    dw[0] += dh[0] * x
    dx += dh[0] * ws[0]
    return loss, hs, dw, dx


@pytest.fixture(scope="module")
def dumped() -> dict:
    r = subprocess.run([str(spec_main()), "model", "-"], input=model_text(), capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_many_bindings_mean_what_they_say(dumped):
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=16), rng.normal(size=16)
    ws = [rng.uniform(0.5, 1.0, size=16) * (1 if k % 2 else -1) for k in range(K)]
    values = {"x": x, "y": y, **{f"w{k}": ws[k] for k in range(K)}}
    got = oracle.evaluate(dumped, values, np.float64)
    loss, hs, dw, dx = numpy_model(x, y, ws)
    assert len(dumped["chain"]) == N + 2
    for i in (0, 1, 3, 7, 10, N // 2, N - 1):
        np.testing.assert_allclose(got[f"h{i}"].ravel(), hs[i], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(got["l"].ravel(), [loss], rtol=1e-12)
    for k in range(K):
        np.testing.assert_allclose(got[f"d_w{k}"].ravel(), dw[k], rtol=1e-9, atol=1e-9)


def test_duplicate_far_down_is_named_with_both_lines():
    """A name defined again thousands of lines below its first definition: the error names
    both lines (Spec/Front/Model.agda's names-ok, through the trie)."""
    text = model_text().replace(f"h{N - 2} = ", "h5 = ", 1)
    r = subprocess.run([str(spec_main()), "model", "-"], input=text, capture_output=True,
                       text=True, timeout=600)
    first = next(n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith("h5 = "))
    again = next(n for n, ln in enumerate(text.splitlines(), 1)
                 if ln.startswith("h5 = ") and n != first)
    assert r.returncode == 1
    assert f"{again}: h5 is already defined (line {first})" in r.stderr, r.stderr

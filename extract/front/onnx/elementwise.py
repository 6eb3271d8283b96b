"""Elementwise operators: arithmetic with ONNX broadcasting (``im.broadcast``: a ``for`` over the
output's positions when the shapes differ) and the functions of the model language.

    Add(x, b)  x : 4×3, b : 3      ->   out = for i0 : 4 . for i1 : 3 . x[i0][i1] + b[i1]
    Relu(x)                        ->   out = relu(x)
"""
from __future__ import annotations

import math

import numpy as np

from .core import _T, _fors, _lang

SUPPORTED = {
    "Add": "broadcasting", "Sub": "broadcasting", "Mul": "broadcasting",
    "Div": "broadcasting (a · recip(b); by a whole-number constant: a / n)",
    "Max": "two or more inputs, broadcasting", "Sum": "broadcasting",
    "Relu": "", "Sigmoid": "", "Tanh": "", "Exp": "", "Log": "", "Neg": "", "Reciprocal": "",
    "Sqrt": "", "Identity": "", "Erf": "",
    "Gelu": "opset 20: approximate='none' (the default) x·(1 + erf(x/√2))/2, and 'tanh' "
            "x·σ(2u), u = √(2/π)·(x + 0.044715·x³)",
    "Pow": "a constant whole exponent from 1 to 8 (repeated products), or 0.5 (sqrt), "
           "-0.5 (recip(sqrt))",
    "Clip": "constant min and max (inputs or, before opset 11, attributes): max, and min as "
            "-max(-a, -b)",
    "LeakyRelu": "relu(x) - relu(-x)·alpha", "PRelu": "relu(x) - relu(-x)·slope, slope broadcast",
    "Elu": "relu(x) + alpha·(exp(-relu(-x)) - 1)",
    "Dropout": "inference: the identity (the mask output only if nothing reads it)",
}


def op_Add(im, node, a):
    im.only(node, a, {})
    im.broadcast(node, [im.operand(node, 0), im.operand(node, 1)],
                   lambda x, y, numpy=False: x + y if numpy else f"{x} + {y}")


def op_Sub(im, node, a):
    im.only(node, a, {})
    im.broadcast(node, [im.operand(node, 0), im.operand(node, 1)],
                   lambda x, y, numpy=False: x - y if numpy else f"{x} - ({y})")


def op_Mul(im, node, a):
    im.only(node, a, {})
    im.broadcast(node, [im.operand(node, 0), im.operand(node, 1)],
                   lambda x, y, numpy=False: x * y if numpy else f"({x}) * ({y})")


def op_Div(im, node, a):
    im.only(node, a, {})
    x, y = im.operand(node, 0), im.operand(node, 1)
    if y.const and y.value.size == 1 and not x.const:
        v = float(y.value.reshape(()))
        if v == int(v) and v >= 1:
            im.bind(node, 0, np.broadcast_shapes(x.shape, y.shape),
                      f"{x.text} / {int(v)}")
            return
    def combine(p, q, numpy=False):
        if not numpy:
            return f"({p}) * recip({q})"
        if p.dtype.kind in "iu" and q.dtype.kind in "iu":   # ONNX: toward zero
            return np.sign(p) * np.sign(q) * (np.abs(p) // np.abs(q))
        return p / q
    im.broadcast(node, [x, y], combine)


def op_Pow(im, node, a):
    """``x ** k`` for a constant whole ``k`` in 1..8: ``x * x * …`` (each factor the same
    binding); ``x ** 0.5``: ``sqrt(x)``, ``x ** -0.5`` (RMS normalisation's):
    ``recip(sqrt(x))``; another exponent has no form in the model language."""
    im.only(node, a, {})
    x, y = im.operand(node, 0), im.operand(node, 1)
    if x.const and y.const:
        im.out_const(node, np.power(x.value.astype(np.float64), y.value))
        return
    if not (y.const and y.value.size == 1):
        im.fail(node, "the exponent must be a constant (a scalar initializer or Constant)")
    k = float(y.value.reshape(()))
    if k in (0.5, -0.5):  # (x is not a constant: of two, the power is folded above)
        im.bind(node, 0, x.shape, f"sqrt({x.text})" if k > 0 else f"recip(sqrt({x.text}))")
        return
    if not (k == int(k) and 1 <= k <= 8):
        im.fail(node, f"the exponent {k:g} is not a whole number from 1 to 8 (nor ±0.5)")
    if x.const:
        im.out_const(node, x.value ** int(k))
    else:
        im.bind(node, 0, x.shape, " * ".join([x.text] * int(k)))


def op_Max(im, node, a):
    im.only(node, a, {})
    ts = [im.operand(node, k) for k in range(len(node.input))]

    def combine(*xs, numpy=False):
        if numpy:
            return np.maximum.reduce(np.broadcast_arrays(*xs))
        e = xs[0]
        for x in xs[1:]:
            e = f"max({e}, {x})"
        return e
    im.broadcast(node, ts, combine)


def op_Sum(im, node, a):
    im.only(node, a, {})
    ts = [im.operand(node, k) for k in range(len(node.input))]

    def combine(*xs, numpy=False):
        if numpy:
            return sum(np.broadcast_arrays(*xs))
        return " + ".join(xs)
    im.broadcast(node, ts, combine)


def _unary(im, node, a, fn, npf):
    im.only(node, a, {})
    x = im.operand(node, 0)
    if x.const:
        im.out_const(node, npf(x.value))
    else:
        im.bind(node, 0, x.shape, fn(x.text))


def op_Relu(im, node, a):
    _unary(im, node, a, lambda x: f"relu({x})", lambda v: np.maximum(v, 0))


def op_Sigmoid(im, node, a):
    _unary(im, node, a, lambda x: f"logistic({x})", lambda v: 1 / (1 + np.exp(-v)))


def op_Tanh(im, node, a):
    # the model language's tanh layer: 2σ(2x) − 1
    _unary(im, node, a, lambda x: f"tanh({x})", np.tanh)


def op_Exp(im, node, a):
    _unary(im, node, a, lambda x: f"exp({x})", np.exp)


def op_Log(im, node, a):
    _unary(im, node, a, lambda x: f"log({x})", np.log)


def op_Neg(im, node, a):
    _unary(im, node, a, lambda x: f"-{x}", np.negative)


def op_Reciprocal(im, node, a):
    _unary(im, node, a, lambda x: f"recip({x})", lambda v: 1 / v)


def op_Sqrt(im, node, a):
    # IEEE: NaN below 0, as ONNX's
    _unary(im, node, a, lambda x: f"sqrt({x})", np.sqrt)


def _erf(v):
    """erf elementwise in float64 (NumPy has none): Python's math.erf."""
    return np.vectorize(math.erf, otypes=[np.float64])(v)


def op_Erf(im, node, a):
    _unary(im, node, a, lambda x: f"erf({x})", _erf)


# 2·√(2/π) and the coefficient of x³ of GELU's tanh form (ONNX's Gelu, PyTorch's
# nn.GELU(approximate="tanh"))
_GELU_SCALE = 2.0 * math.sqrt(2.0 / math.pi)


_GELU_CUBIC = 0.044715


def op_Gelu(im, node, a):
    """``approximate="none"`` (the default, PyTorch's ``nn.GELU()``): ``x·Φ(x) = x·(1 +
    erf(x/√2))/2``: the binding ``Y_u = x·r`` with the const ``Y_rsqrt2`` (``r = 1/√2``), then
    ``Y = x * (1 + erf(Y_u)) / 2``. ``approximate="tanh"``: ``0.5·x·(1 + tanh(u))``, ``u =
    √(2/π)·(x + 0.044715·x³)``, is ``x·σ(2u)`` (``0.5·(1 + tanh u) = σ(2u)``): the binding
    ``Y_2u = (x + x·x·x·k)·s`` with the consts ``Y_cubic`` (``k = 0.044715``) and ``Y_scale``
    (``s = 2·√(2/π)``), then ``Y = x * logistic(Y_2u)``."""
    approx = a.get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    im.only(node, a, {"approximate": lambda v: True})
    if im.opset < 20:
        im.fail(node, f"Gelu is an operator of opset 20; the model imports opset "
                        f"{im.opset}")
    if approx not in ("none", "tanh"):
        im.fail(node, f"approximate={approx!r} is not supported (only 'none' and 'tanh')")
    x = im.operand(node, 0)
    if x.const:
        v = x.value
        im.out_const(node, 0.5 * v * (1 + _erf(v / math.sqrt(2))) if approx == "none" else
                     0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi)
                                            * (v + _GELU_CUBIC * v ** 3))))
        return
    base = node.output[0]
    shape = _lang(x.shape)
    idx = [f"i{j}" for j in range(len(shape))]
    e = x.text + "".join(f"[{i}]" for i in idx)
    if approx == "none":
        r = im.ref(_T((), f"{base}_rsqrt2", np.array(1 / math.sqrt(2)), True), node)
        u = im.fresh(f"{base}_u", "binding")
        im.lines.append((u, _fors(idx, shape, f"{e} * {r}"), u))
        im.bind(node, 0, x.shape, f"{x.text} * (1 + erf({u})) / 2")
        return
    k = im.ref(_T((), f"{base}_cubic", np.array(_GELU_CUBIC), True), node)
    s = im.ref(_T((), f"{base}_scale", np.array(_GELU_SCALE), True), node)
    u = im.fresh(f"{base}_2u", "binding")
    im.lines.append((u, _fors(idx, shape, f"({e} + {e} * {e} * {e} * {k}) * {s}"), u))
    im.bind(node, 0, x.shape, f"{x.text} * logistic({u})")


def _scalar_const(im, node, v: float, name: str) -> _T:
    """A number of an attribute as a const of shape 1 (the language writes no decimals)."""
    return _T((), f"{node.output[0]}_{name}", np.array(float(v)), True)


def op_Clip(im, node, a):
    """``min(max(x, lo), hi)``: ``max(x, lo)`` (``relu(x)`` when ``lo`` is the constant 0:
    ReLU6 is ``-max(-relu(x), -six)``), and the minimum with ``hi`` as ``-max(-a, -hi)``
    (exact: a negation is exact); a constant bound is a const of shape 1, a computed one a
    scalar binding, broadcast over ``x``. A bound left out (or ±inf, the attributes'
    defaults before opset 11) is not applied."""
    im.only(node, a, {"min": lambda v: True, "max": lambda v: True})
    x = im.operand(node, 0)
    if im.opset < 11:
        given = [None if a.get(n) is None else _scalar_const(im, node, a[n], n)
                 for n in ("min", "max")]
    else:
        if "min" in a or "max" in a:
            im.fail(node, "min and max are inputs from opset 11 on, not attributes")
        given = [im.operand(node, k) if len(node.input) > k and node.input[k] else None
                 for k in (1, 2)]
    bounds = []
    for t, name in zip(given, ("min", "max")):
        if t is not None and math.prod(t.shape) != 1:
            im.fail(node, f"a {name} of shape {t.shape}: a scalar is required")
        if t is not None and t.const:
            v = float(np.asarray(t.value, np.float64).reshape(()))
            if math.isinf(v) and (v < 0) == (name == "min"):
                t = None
            else:
                t = _scalar_const(im, node, v, name)
        bounds.append(t)
    lo, hi = bounds
    if x.const and all(b is None or b.const for b in bounds):
        im.out_const(node, np.clip(x.value, -np.inf if lo is None else lo.value,
                                   np.inf if hi is None else hi.value))
        return
    if lo is None and hi is None:
        im.env[node.output[0]] = x
        return
    zero = lo is not None and lo.const and float(lo.value) == 0.0
    if zero and hi is None:
        im.bind(node, 0, x.shape, f"relu({x.text})")
        return
    ts = [x] + [b for b in (lo, hi) if b is not None and not (b is lo and zero)]

    def combine(e, *bs, numpy=False):
        bs = list(bs)
        if lo is not None:
            e = f"relu({e})" if zero else f"max({e}, {bs.pop(0)})"
        if hi is not None:
            e = f"-max(-{e}, -{bs.pop(0)})"
        return e
    im.broadcast(node, ts, combine)


def op_LeakyRelu(im, node, a):
    """``x`` where ``x ≥ 0``, else ``alpha·x``: ``relu(x) - relu(-x) * alpha`` (exact: one of
    the two terms is 0), ``alpha`` a const (0.01 by default)."""
    im.only(node, a, {"alpha": lambda v: True})
    x = im.operand(node, 0)
    alpha = float(a.get("alpha", 0.01))
    if x.const:
        im.out_const(node, np.where(x.value >= 0, x.value, x.value * alpha))
        return
    im.broadcast(node, [x, _scalar_const(im, node, alpha, "alpha")],
                 lambda e, s, numpy=False: f"relu({e}) - relu(-{e}) * {s}")


def op_PRelu(im, node, a):
    """``relu(x) - relu(-x) * slope``, the slope (a parameter: PyTorch's ``nn.PReLU`` learns
    it) broadcast against ``x`` (before opset 7, a slope of C elements is per channel)."""
    im.only(node, a, {})
    x, slope = im.operand(node, 0), im.operand(node, 1)
    full = ((1,) if im.batch and not x.const else ()) + x.shape
    if (im.opset < 7 and slope.const and slope.value.ndim == 1 and len(full) > 2
            and slope.value.shape[0] == full[1] > 1):
        # before opset 7 a slope of C elements is per channel (axis 1), not broadcast
        per = (full[1],) + (1,) * (len(full) - 2)
        slope = _T(per, slope.text, slope.value.reshape(per), slope.fixed)
    im.broadcast(node, [x, slope], lambda e, s, numpy=False:
                 np.where(e >= 0, e, e * s) if numpy else f"relu({e}) - relu(-{e}) * {s}")


def op_Elu(im, node, a):
    """``x`` where ``x > 0``, else ``alpha·(exp(x) − 1)``: ``relu(x) + (exp(-relu(-x)) - 1) *
    alpha`` (for ``x > 0`` the second term is ``(exp(0) − 1)·alpha = 0``; for ``x ≤ 0`` the
    first is 0)."""
    im.only(node, a, {"alpha": lambda v: True})
    x = im.operand(node, 0)
    alpha = float(a.get("alpha", 1.0))
    if x.const:
        im.out_const(node, np.where(x.value > 0, x.value, alpha * np.expm1(x.value)))
        return
    if alpha == 1.0:
        im.broadcast(node, [x], lambda e, numpy=False: f"relu({e}) + exp(-relu(-{e})) - 1")
        return
    im.broadcast(node, [x, _scalar_const(im, node, alpha, "alpha")],
                 lambda e, s, numpy=False: f"relu({e}) + (exp(-relu(-{e})) - 1) * {s}")


def op_Dropout(im, node, a):
    """Inference: the identity (ONNX's Dropout without ``training_mode``, or with it a constant
    false). Its mask output is refused when a node or the graph reads it."""
    im.only(node, a, {"ratio": lambda v: True, "seed": lambda v: True,
                      "is_test": lambda v: v == 1 or im.opset >= 7})
    if im.opset < 7 and a.get("is_test", 0) != 1:
        im.fail(node, "is_test=0 (training mode, before opset 7): export in eval mode")
    if len(node.input) > 2 and node.input[2]:
        t = im.operand(node, 2)
        if not t.const:
            im.fail(node, "a training_mode computed by the graph (a constant false is "
                          "supported)")
        if bool(np.asarray(t.value).reshape(-1)[0]):
            im.fail(node, "training_mode is true: random dropout is not expressible (export "
                          "in eval mode)")
    if len(node.output) > 1 and node.output[1]:
        mask = node.output[1]
        readers = [n for n in im.graph.node if mask in n.input]
        if readers or mask in {o.name for o in im.graph.output}:
            im.fail(node, f"its mask output {mask!r} is read "
                          + (f"by node {readers[0].name or readers[0].op_type!r}" if readers
                             else "as a graph output")
                          + " (only the data output is supported)")
    im.env[node.output[0]] = im.operand(node, 0)


def op_Identity(im, node, a):
    im.only(node, a, {})
    im.env[node.output[0]] = im.operand(node, 0)


HANDLERS = {
    "Add": op_Add,
    "Sub": op_Sub,
    "Mul": op_Mul,
    "Div": op_Div,
    "Pow": op_Pow,
    "Max": op_Max,
    "Sum": op_Sum,
    "Relu": op_Relu,
    "Sigmoid": op_Sigmoid,
    "Tanh": op_Tanh,
    "Exp": op_Exp,
    "Log": op_Log,
    "Neg": op_Neg,
    "Reciprocal": op_Reciprocal,
    "Sqrt": op_Sqrt,
    "Erf": op_Erf,
    "Gelu": op_Gelu,
    "Identity": op_Identity,
    "Clip": op_Clip,
    "LeakyRelu": op_LeakyRelu,
    "PRelu": op_PRelu,
    "Elu": op_Elu,
    "Dropout": op_Dropout,
}

"""Normalisations and reductions: ``BatchNormalization`` (inference, folded per channel),
``LayerNormalization``, ``Softmax``/``LogSoftmax`` (shifted by the maximum) and
``ReduceSum``/``ReduceMean``.

    Softmax(z)  z : 10   ->   out_max = maxall(z)
                              out_exp = for j : 10 . exp(z[j] - out_max)
                              out_sum = sum j : 10 . out_exp[j]
                              out = for j : 10 . out_exp[j] * recip(out_sum)
"""
from __future__ import annotations

import math

import numpy as np

from .core import _FLOAT_TYPES, _T, _fors, _lang

SUPPORTED = {
    "Softmax": "any axis (before opset 13: the axes from it to the last)",
    "LogSoftmax": "any axis (before opset 13: the axes from it to the last)",
    "LRN": "across channels: a band of ones sums the squares; the power as exp(-beta·log(·))",
    "ReduceSum": "constant axes", "ReduceMean": "constant axes", "ReduceMax": "constant axes",
    "BatchNormalization": "inference (training_mode 0), constant statistics: folded to "
                          "x · a + b per channel",
    "LayerNormalization": "the output Y (not Mean, InvStdDev), not over the batch axis",
}


def op_BatchNormalization(im, node, a):
    """Inference mode (PyTorch's ``model.eval()`` export): with constant statistics,
    ``scale · (x − mean) / √(var + ε) + B`` is ``x · s + t`` per channel (axis 1 of the ONNX
    tensor), ``s = scale / √(var + ε)`` and ``t = B − mean · s`` folded with NumPy in
    float64; then one binding ``x · s + t`` of constants ``s``, ``t`` of shape C×1×…×1 (the
    parameters ``SCALE_folded`` and ``B_folded``, or consts if the statistics all are)."""
    if a.get("training_mode", 0) != 0:
        im.fail(node, f"training_mode={a['training_mode']}: the statistics of the batch "
                        f"(training mode) are not expressible; export in eval mode")
    if a.get("is_test", 1) != 1:   # opset 6 and before: is_test=0 is training mode
        im.fail(node, f"is_test={a['is_test']}: the statistics of the batch (training "
                        f"mode) are not expressible; export in eval mode")
    if any(node.output[1:]):
        im.fail(node, "the running mean and variance outputs (training mode) are not "
                        "supported")
    im.only(node, a, {"epsilon": lambda v: True, "momentum": lambda v: True,
                        "training_mode": lambda v: True, "is_test": lambda v: True,
                        "spatial": lambda v: v == 1})   # opset 7-8; 1 by default
    if len(node.input) != 5 or not all(node.input):
        im.fail(node, f"{len(node.input)} inputs: X, scale, B, input_mean and input_var "
                        f"are required")
    x = im.operand(node, 0)
    scale, bias, mean, var = (im.const_of(node, k, what) for k, what in
                              [(1, "the scale"), (2, "the bias B"), (3, "the mean"),
                               (4, "the variance")])
    rank = len(x.shape) + (im.batch and not x.const)   # with the batch axis
    if rank < 2:
        im.fail(node, f"an input of shape {x.shape}: no channel axis (N×C×…)")
    C = (((1,) if im.batch and not x.const else ()) + x.shape)[1]
    if any(v.shape != (C,) for v in (scale, bias, mean, var)):
        im.fail(node, f"scale, B, mean and variance of shapes {scale.shape}, {bias.shape}, "
                        f"{mean.shape}, {var.shape}: each must have the {C} channels")
    eps = float(a.get("epsilon", 1e-5))
    f64 = [np.asarray(v, np.float64) for v in (scale, bias, mean, var)]
    s = f64[0] / np.sqrt(f64[3] + eps)
    t = f64[1] - f64[2] * s
    per = (C,) + (1,) * (rank - 2)
    fixed = all(im.operand(node, k).fixed for k in range(1, 5))
    s = _T(per, f"{node.input[1]}_folded", s.reshape(per), fixed)
    t = _T(per, f"{node.input[2]}_folded", t.reshape(per), fixed)
    # one binding, x · s + t (as two, a Mul's and an Add's, ResNet-50's 53 were 53 arrays
    # of activations and 53 of their gradients more)
    im.broadcast(node, [x, s, t], lambda p, q, r, numpy=False:
                   p * q + r if numpy else f"({p}) * ({q}) + {r}")


def op_LayerNormalization(im, node, a):
    """Over the axes from ``axis`` to the last (opset 17), as ONNX's function body computes
    it: ``mean = Σ x / n``, ``c = x − mean``, ``var = Σ c² / n``, ``Y = c · recip(sqrt(var +
    ε)) · Scale + B``, Scale and B broadcast against X. The mean, ``c`` and the inverse
    standard deviation are bindings (``Y_mean``, ``Y_centred``, ``Y_var``, ``Y_invstd``:
    computed once, per position of the axes before ``axis``), ε a ``const`` (the language
    writes no decimals: ``Y_eps``, its value with the weights). Only the output Y: the
    Mean and InvStdDev outputs are refused."""
    extra = [(what, o) for what, o in zip(("Mean", "InvStdDev"), node.output[1:]) if o]
    if extra:
        im.fail(node, " and ".join(f"the {what} output {o!r}" for what, o in extra)
                  + (" are" if len(extra) > 1 else " is") + " not supported (only Y)")
    im.only(node, a, {"axis": lambda v: True, "epsilon": lambda v: True,
                        "stash_type": lambda v: v in _FLOAT_TYPES})
    if len(node.input) < 2 or not node.input[1]:
        im.fail(node, "no Scale input (X and Scale are required)")
    x = im.operand(node, 0)
    if x.const:
        im.fail(node, "of a constant")
    ts = [im.operand(node, k) for k in (1, 2) if len(node.input) > k and node.input[k]]
    shape = x.shape
    rank = len(shape) + im.batch       # ONNX's, with the batch axis
    axis = a.get("axis", -1)
    ax = axis + rank if axis < 0 else axis
    if not 0 <= ax < rank:
        im.fail(node, f"axis={axis} of an input of rank {rank}")
    if im.batch:
        if ax == 0:
            im.fail(node, f"axis={axis} normalises over the batch axis")
        ax -= 1
        ts = [im.unbatch(node, t, len(shape)) if t.const else t for t in ts]
    try:
        out = tuple(np.broadcast_shapes(shape, *[t.shape for t in ts]))
    except ValueError:
        out = None
    if out != shape:
        two = len(ts) > 1
        im.fail(node, f"Scale{' and B' if two else ''} of shape{'s' if two else ''} "
                  + ", ".join(str(t.shape) for t in ts)
                  + f" do{'' if two else 'es'} not broadcast to X's "
                  + f"{'per-sample ' if im.batch else ''}shape {shape}")
    outer, inner = shape[:ax], shape[ax:]
    n = math.prod(inner)
    idx = [f"i{k}" for k in range(len(shape))]
    red = [f"r{k}" for k in range(ax, len(shape))]

    def at(name, shp, ix):     # a trailing dimension 1 is absorbed (_lang)
        return name + "".join(f"[{i}]" for i in ix[:len(_lang(shp))])

    def mean_over(f):          # for the outer positions: Σ f(position) / n over the inner
        body = f(idx[:ax] + red)
        for r, d in reversed(list(zip(red, inner))):
            body = f"sum {r} : {d} . {body}"
        return _fors(idx[:ax], outer, f"({body}) / {n}" if n > 1 else body)

    base = node.output[0]
    mean, c, var, inv = (im.fresh(f"{base}_{w}", "binding")
                         for w in ("mean", "centred", "var", "invstd"))
    im._outdims = shape
    scale, *bias = (im.elem(t, idx, len(shape), node) for t in ts)
    eps = im.ref(_T((), f"{base}_eps", np.array(float(a.get("epsilon", 1e-5))), True),
                   node)
    im.lines.append((mean, mean_over(lambda ix: at(x.text, shape, ix)), mean))
    im.lines.append((c, _fors(idx, shape, f"{at(x.text, shape, idx)} - "
                                            f"{at(mean, outer, idx)}"), c))
    im.lines.append((var, mean_over(lambda ix: f"{at(c, shape, ix)} * {at(c, shape, ix)}"),
                       var))
    im.lines.append((inv, _fors(idx[:ax], outer,
                                  f"recip(sqrt({at(var, outer, idx)} + {eps}))"), inv))
    body = " + ".join([f"{at(c, shape, idx)} * {at(inv, outer, idx)} * {scale}", *bias])
    im.bind(node, 0, shape, _fors(idx, shape, body))


def _softmax_axes(im, node, a, x: _T) -> list[int]:
    """The axes a softmax normalises over, of the per-sample shape: ``axis`` (opset 13), or
    from ``axis`` to the last (before: the input read as a matrix, 1 by default)."""
    rank = len(x.shape) + (1 if im.batch else 0)
    ax = a.get("axis", -1 if im.opset >= 13 else 1)
    ax = ax + rank if ax < 0 else ax
    if not 0 <= ax < rank:
        im.fail(node, f"axis={a.get('axis', ax)} of a tensor of rank {rank}")
    axes = [ax] if im.opset >= 13 else list(range(ax, rank))
    if im.batch:
        if 0 in axes:
            im.fail(node, f"axis={a.get('axis', ax)} normalises over the batch axis")
        axes = [v - 1 for v in axes]
    return axes


def _softmax(im, node, a, log: bool):
    """Over the last axis: ``m = maxall(x[i])``, ``e = exp(x[i][j] − m[i])``, ``s = Σ_j e``,
    then ``e · recip(s)`` (or ``x − m − log(s)``), each a binding. Over other axes the same
    with ``m = detach(max r : d . …)`` and ``sum r : d . …`` over them, the other axes
    mapped."""
    im.only(node, a, {"axis": lambda v: True})
    x = im.operand(node, 0)
    if x.const:
        im.fail(node, "of a constant")
    axes = _softmax_axes(im, node, a, x)
    if axes != [len(x.shape) - 1]:
        _softmax_axes_general(im, node, x, axes, log)
        return
    n = x.shape[-1]
    outer = x.shape[:-1]
    oi = [f"i{k}" for k in range(len(outer))]
    at = "".join(f"[{i}]" for i in oi)
    base = node.output[0]
    m = im.fresh(base + "_max", "binding")
    e = im.fresh(base + "_exp", "binding")
    s = im.fresh(base + "_sum", "binding")
    im.lines.append((m, _fors(oi, outer, f"maxall({x.text}{at})"), m))
    im.lines.append((e, _fors(oi + ["j"], outer + (n,),
                                f"exp({x.text}{at}[j] - {m}{at})"), e))
    im.lines.append((s, _fors(oi, outer, f"sum j : {n} . {e}{at}[j]"), s))
    if log:
        body = f"{x.text}{at}[j] - {m}{at} - log({s}{at})"
    else:
        body = f"{e}{at}[j] * recip({s}{at})"
    t = im.bind(node, 0, x.shape, _fors(oi + ["j"], outer + (n,), body))
    if not log and not outer:
        im.softmax_of[t.text] = (x.text, m, s)


def _softmax_axes_general(im, node, x: _T, axes: list[int], log: bool) -> None:
    shape = x.shape
    idx = [f"i{k}" for k in range(len(shape))]
    red = [f"r{k}" for k in axes]
    keep = [k for k in range(len(shape)) if k not in axes]
    outer = tuple(shape[k] for k in keep)
    oi = [idx[k] for k in keep]

    def at(name, shp, ix):
        return name + "".join(f"[{i}]" for i in ix[:len(_lang(shp))])

    def over(binder, f):     # binder r : d over the axes, of f(the full index)
        full = list(idx)
        for k, r in zip(axes, red):
            full[k] = r
        body = f(full)
        for k, r in reversed(list(zip(axes, red))):
            body = f"{binder} {r} : {shape[k]} . {body}"
        return body

    base = node.output[0]
    m, e, s = (im.fresh(f"{base}_{w}", "binding") for w in ("max", "exp", "sum"))
    # the shift is detached (logsumexp's way): the output does not depend on it, and its
    # gradient, which would cancel, is not computed (a maximum over a middle axis in the
    # gradient is an argmax the extractor recomputes per element)
    im.lines.append((m, _fors(oi, outer, "detach(" + over("max", lambda ix: at(x.text, shape,
                                                                            ix)) + ")"), m))
    im.lines.append((e, _fors(idx, shape, f"exp({at(x.text, shape, idx)} - "
                                          f"{at(m, outer, oi)})"), e))
    im.lines.append((s, _fors(oi, outer, over("sum", lambda ix: at(e, shape, ix))), s))
    if log:
        body = f"{at(x.text, shape, idx)} - {at(m, outer, oi)} - log({at(s, outer, oi)})"
    else:
        body = f"{at(e, shape, idx)} * recip({at(s, outer, oi)})"
    im.bind(node, 0, shape, _fors(idx, shape, body))


def op_LRN(im, node, a):
    """Local response normalisation across channels (AlexNet's, GoogLeNet's):
    ``y = x · (bias + alpha/size · Σ x²)^(−beta)``, the sum over the channels
    ``c − ⌊(size−1)/2⌋ … c + ⌈(size−1)/2⌉`` that exist. The squares are a binding
    (``Y_sq``), their windowed sums another (``Y_window``: ``sum n : C . band[c][n] *
    sq[n][h][w]``, ``band`` a const C×C of 0s and 1s, exact), and the power
    ``exp(log(bias + alpha/size · window) · (−beta))``, ``alpha/size``, ``bias`` and ``−beta``
    consts (``exp`` and ``log``: a relative error of a few units of the last place)."""
    im.only(node, a, {"alpha": lambda v: True, "beta": lambda v: True,
                      "bias": lambda v: True, "size": lambda v: v >= 1})
    x = im.operand(node, 0)
    if x.const:
        im.fail(node, "of a constant")
    if "size" not in a:
        im.fail(node, "no size attribute (it is required)")
    rank = len(x.shape) + im.batch
    if rank < 3:
        im.fail(node, f"an input of rank {rank}: N×C×… is required")
    size = int(a["size"])
    alpha, beta, bias = (float(a.get(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75),
                                                        ("bias", 1.0)))
    shape = x.shape
    cax = 1 - im.batch                          # the channel axis, per sample
    C = shape[cax]
    lo, hi = (size - 1) // 2, -(-(size - 1) // 2)
    band = np.zeros((C, C))
    for c in range(C):
        band[c, max(0, c - lo):min(C, c + hi + 1)] = 1
    base = node.output[0]
    idx = [f"i{k}" for k in range(len(shape))]

    def at(name, ix):
        return name + "".join(f"[{i}]" for i in ix[:len(_lang(shape))])

    B = im.ref(_T((C, C), f"{base}_band", band, True), node)
    ka = im.ref(_T((), f"{base}_alpha", np.array(alpha / size), True), node)
    kb = im.ref(_T((), f"{base}_bias", np.array(bias), True), node)
    nb = im.ref(_T((), f"{base}_beta", np.array(-beta), True), node)
    sq = im.fresh(f"{base}_sq", "binding")
    im.lines.append((sq, f"{x.text} * {x.text}", sq))
    win = im.fresh(f"{base}_window", "binding")
    nix = list(idx)
    nix[cax] = "n"
    im.lines.append((win, _fors(idx, shape, f"sum n : {C} . {B}[{idx[cax]}][n] * "
                                            f"{at(sq, nix)}"), win))
    body = f"{at(x.text, idx)} * exp(log({at(win, idx)} * {ka} + {kb}) * {nb})"
    im.bind(node, 0, shape, _fors(idx, shape, body))


def op_Softmax(im, node, a):
    _softmax(im, node, a, log=False)


def op_LogSoftmax(im, node, a):
    _softmax(im, node, a, log=True)


def _reduce(im, node, a, mean: bool, largest: bool = False):
    im.only(node, a, {"axes": lambda v: True, "keepdims": lambda v: True,
                        "noop_with_empty_axes": lambda v: v == 0})
    x = im.operand(node, 0)
    keep = a.get("keepdims", 1)
    if x.const:
        _reduce_constant(im, node, x, im.raw_axes(node, a), keep, mean, largest)
        return
    axes = im.raw_axes(node, a)
    if not axes:
        axes = list(range(len(x.shape)))
    else:
        axes = im.norm_axes(node, axes, len(x.shape) + im.batch)
    out_idx, out_shape, sel, sums = [], [], [], []
    for i, d in enumerate(x.shape):
        if i in axes:
            r = f"r{i}"
            sums.append((r, d))
            sel.append(r)
            if keep:
                out_idx.append(f"z{i}")
                out_shape.append(1)
        else:
            out_idx.append(f"i{i}")
            out_shape.append(d)
            sel.append(f"i{i}")
    body = x.text + "".join(f"[{s}]" for s in sel[:len(_lang(x.shape))])
    for r, d in reversed(sums):
        body = f"{'max' if largest else 'sum'} {r} : {d} . {body}"
    count = math.prod(d for _, d in sums)
    if mean and count > 1:
        body = f"({body}) / {count}"
    im.bind(node, 0, tuple(out_shape), _fors(out_idx, out_shape, body) if out_idx
              else body)


def _reduce_constant(im, node, x, axes, keep, mean: bool, largest: bool):
    """A reduction of a constant (its own axes: a constant has no batch axis), folded into a
    constant of the node's output, a weight if the input is one (as Squeeze of a constant
    is): over axes of size 1 alone a reshaped view of it (the residual scalar of an
    exported zoo ResNet, ``ReduceSum(Reshape(m, 1×1×…))``, read by nothing else), else the
    NumPy sum, mean or maximum."""
    v = x.value
    r = v.ndim
    axes = list(range(r)) if not axes else [k + r if k < 0 else k for k in axes]
    if any(not 0 <= k < r for k in axes):
        im.fail(node, f"axes {list(axes)} of a constant of shape {v.shape}")
    axes = sorted(set(axes))
    if all(v.shape[k] == 1 for k in axes):
        out = v.reshape(tuple(1 if k in axes else d for k, d in enumerate(v.shape) if keep
                              or k not in axes))
    else:
        f = np.max if largest else np.mean if mean else np.sum
        out = f(v, axis=tuple(axes), keepdims=bool(keep))
    im.out_const(node, out)


def op_ReduceSum(im, node, a):
    _reduce(im, node, a, mean=False)


def op_ReduceMean(im, node, a):
    _reduce(im, node, a, mean=True)


def op_ReduceMax(im, node, a):
    _reduce(im, node, a, mean=False, largest=True)


HANDLERS = {
    "LRN": op_LRN,
    "BatchNormalization": op_BatchNormalization,
    "LayerNormalization": op_LayerNormalization,
    "Softmax": op_Softmax,
    "LogSoftmax": op_LogSoftmax,
    "ReduceSum": op_ReduceSum,
    "ReduceMean": op_ReduceMean,
    "ReduceMax": op_ReduceMax,
}

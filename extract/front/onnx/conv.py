"""Convolution and pooling: ``Conv`` as the ``conv2d`` layer, ``MaxPool``/``AveragePool`` as the
``maxpool``/``avgpool`` layers, padded (when they are) by a 1×1 ``conv2d`` of ones.

    Conv(x, W, B) {pads 1,1,1,1}   ->   out = conv2d(x, W, B, 1)
    MaxPool(x) {kernel 2, stride 2} ->  out = maxpool(x, 2)
"""
from __future__ import annotations

import numpy as np

from .core import _T, _fors, _lang, _root, _shape_text

SUPPORTED = {
    "Conv": "2-D, the same stride on both axes, dilation 1, group 1, the same padding on every side",
    "MaxPool": "2-D, square window and stride, floor mode; padding the same on every side, "
               "smaller than the window (-inf: padded by conv2d, + log of padded ones)",
    "AveragePool": "2-D, square window and stride, floor mode; padding the same on every side, "
                   "smaller than the window (zeros: padded by conv2d), count_include_pad 0 or 1",
}


def _spatial(im, node, x: _T, what: str) -> bool:
    """Whether x has a leading sample axis (rank 4 when batch=False); checks the rank."""
    r = len(x.shape)
    if im.batch and r == 3:
        return False
    if not im.batch and r == 4:
        return True
    im.fail(node, f"{what} of a tensor of shape "
              f"{((1,) if im.batch else ()) + x.shape}: only 2-D (N×C×H×W) is supported")


def _pads(im, node, a, kernel) -> int:
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    pads = list(a.get("pads", [0] * 4))
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        if any(k % 2 == 0 for k in kernel):
            im.fail(node, f"auto_pad={auto} with an even kernel pads asymmetrically")
        pads = [(k - 1) // 2 for k in kernel] * 2
    elif auto not in ("NOTSET", "VALID"):
        im.fail(node, f"auto_pad={auto!r} is not supported")
    if len(set(pads)) != 1:
        im.fail(node, f"pads={pads}: only the same padding on every side is supported "
                        f"(conv2d pads symmetrically, and the model language writes no "
                        f"constant offset to place an array at or crop it from)")
    return pads[0]


def op_Conv(im, node, a):
    x, w = im.operand(node, 0), im.operand(node, 1)
    b = im.operand(node, 2) if len(node.input) > 2 and node.input[2] else None
    ones = lambda v: all(s == 1 for s in v)  # noqa: E731
    same = lambda v: len(set(v)) == 1  # noqa: E731
    im.only(node, a, {"strides": same, "dilations": ones, "group": lambda g: g == 1,
                        "kernel_shape": lambda k: len(k) == 2, "pads": lambda p: True,
                        "auto_pad": lambda p: True})
    if len(w.shape) != 4:
        im.fail(node, f"a kernel of shape {w.shape}: only 2-D convolutions (kernel "
                  f"U×C×kh×kw) are supported")
    stride = a.get("strides", [1, 1])[0]
    auto = a.get("auto_pad", b"NOTSET")
    if stride != 1 and (auto.decode() if isinstance(auto, bytes) else auto) in (
            "SAME_UPPER", "SAME_LOWER"):
        im.fail(node, f"auto_pad={auto!r} with strides={a['strides']} is not supported")
    pad = _pads(im, node, a, w.shape[2:])
    per = _spatial(im, node, x, "a convolution")
    C, H, W = x.shape[-3:]
    if w.shape[1] != C:
        im.fail(node, f"the kernel has {w.shape[1]} channels, the input {C}")
    U, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    out = (U, (H + 2 * pad - kh) // stride + 1, (W + 2 * pad - kw) // stride + 1)
    # The model language absorbs a trailing dimension 1 (`for` of a scalar), so a plane
    # H×1 is the vector H: the planes are convolved transposed, 1×H (`for j : 1` of the
    # vector; 1×1 of a scalar), with the kernel transposed (the same padding on every
    # side, the same stride on both axes: the transposed output), and the output read
    # back transposed. A declared shape is kept as written, so the kernel is declared as
    # it is, U×C×1×1 included.
    flip = W == 1
    args = [_kernel(im, node, w, flip and (kh, kw) != (1, 1))]   # 1×1: its own transpose
    if b is not None:
        args.append(im.ref(b, node))
    if pad or stride != 1:
        args.append(str(pad))
    if stride != 1:
        args.append(str(stride))
    n = x.shape[0] if per else None
    each = f"for n : {n} . " if per else ""   # n, i, j, k: reserved, never a name
    at = "[n]" if per else ""
    src = im.ref(x, node)
    if flip:
        src = im.fresh(f"{node.output[0]}_planes_t", "binding")
        im.lines.append((src, f"{each}for i : {C} . for j : {'1x1' if H == 1 else '1'} . "
                                f"{im.ref(x, node)}{at}[i]", src))
    conv = f"{each}conv2d({src}{at}, {', '.join(args)})"
    shape = ((n,) if per else ()) + out
    if not flip and out[2] != 1:
        im.bind(node, 0, shape, conv)
        return
    # conv2d's output U×H′×1 (or, transposed, U×W′×H′) keeps its trailing 1: read into
    # the language's shape of U×H′×W′, element by element
    raw = im.fresh(f"{node.output[0]}_conv", "binding")
    im.lines.append((raw, conv, raw))
    im.bind(node, 0, shape, f"{each}for i : {out[0]} . for j : {out[1]} . "
                              f"for k : {out[2]} . {raw}{at}[i][{'k][j' if flip else 'j][k'}]")


def _kernel(im, node, w: _T, flip: bool) -> str:
    """The kernel of a ``Conv`` as ``conv2d`` takes it, U×C×kh×kw as written (its trailing
    1s kept: ``_lang`` would absorb them), transposed (U×C×kw×kh) for transposed planes."""
    if not flip and _lang(w.shape) == tuple(w.shape):
        return im.ref(w, node)
    dims = "×".join(map(str, w.shape))
    if not w.const:
        im.fail(node, f"a computed kernel of shape {dims}"
                  + (" of an input whose last dimension is 1" if flip else "")
                  + ": the model language absorbs a trailing dimension 1 of an array it "
                    "computes (a kernel of the graph, declared, keeps it)")
    key = ("kernel", id(w.value), flip)
    if key not in im.derived:
        root = _root(w.value)
        if root in im.declared:
            im.fail(node, f"the kernel {w.text!r} of shape {dims} is read by another "
                            f"operation too, as {_shape_text(w.shape)} (two parameters of "
                            f"one array)")
        if root in im.kernels:
            im.fail(node, f"the kernel {w.text!r} of shape {dims} is the kernel of "
                            f"another Conv too, declared {im.kernels[root]} there "
                            f"(an input ending in 1 takes its kernel transposed)")
        value = w.value.transpose(0, 1, 3, 2) if flip else w.value
        p = im.fresh((w.text or "w") + ("_t" if flip else ""), "param")
        im.derived[key] = p
        im.kernels[root] = f"{p} : {'x'.join(map(str, value.shape))}"
        im.alive.append(w.value)
        im.params[p] = np.ascontiguousarray(value, dtype=np.float32)
        shape = "x".join(map(str, value.shape))
        if not w.fixed:
            im.decls.append(f"param  {p} : {shape}" + ("   -- transposed (an input "
                              "H×1 is convolved as 1×H)" if flip else ""))
        else:
            im.decls.append(f"const  {p} : {shape}   -- a constant of the graph (its "
                              f"value with the weights)" + (", transposed" if flip else ""))
            im.consts.append(p)
    return im.derived[key]


def _pool_pad(im, node, a, k: int, s: int, H: int, W: int) -> int:
    """The padding of a pooling: ``pads`` or ``auto_pad`` SAME (ONNX's: the total padding
    of a dimension ``n`` is ``(⌈n/s⌉ − 1)·s + k − n``, its half, rounded down, before for
    SAME_UPPER); only the same on every side, smaller than the window."""
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        lo, hi = [], []
        for n in (H, W):
            total = max((-(-n // s) - 1) * s + k - n, 0)
            lo.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
            hi.append(total - lo[-1])
        pads, what = lo + hi, f"auto_pad={auto} pads {lo + hi} (begins, ends)"
    elif auto in ("NOTSET", "VALID"):
        pads = list(a.get("pads", [0] * 4)) if auto == "NOTSET" else [0] * 4
        what = f"pads={pads}"
    else:
        im.fail(node, f"auto_pad={auto!r} is not supported")
    if len(pads) != 4:
        im.fail(node, f"{what}: 2-D pooling takes four pads")
    if len(set(pads)) != 1:
        im.fail(node, f"{what}: only the same padding on every side is supported (the "
                        f"model language pads symmetrically, as conv2d does: it writes no "
                        f"constant offset to place an array at)")
    if pads[0] >= k:
        im.fail(node, f"{what}: a padding as large as the window {k}×{k} (a window of "
                        f"padding alone)")
    return pads[0]


def _ones(im, shape: tuple[int, ...]) -> str:
    """A const of ones of ``shape`` (as written: ``1x1x1`` is not absorbed), declared once:
    ``pad_one`` (1×1×1, the kernel of the 1×1 convolution that pads) and ``pad_ones_HxW``
    (the unpadded plane, whose padding marks where the padding is)."""
    key = ("ones", shape)
    if key not in im.derived:
        p = im.fresh("pad_one" if shape == (1, 1, 1)
                        else "pad_ones_" + "x".join(map(str, shape)), "param")
        im.derived[key] = p
        im.params[p] = np.ones(shape, np.float32)
        im.decls.append(f"const  {p} : {'x'.join(map(str, shape))}   -- ones (for a "
                          f"padding)")
        im.consts.append(p)
    return im.derived[key]


def _padded_ones(im, node, H: int, W: int, P: int) -> str:
    """Ones of shape H×W padded by P zeros on each side: 1 inside, 0 in the padding (a
    binding of consts alone: no gradient)."""
    key = ("padded ones", H, W, P)
    if key not in im.derived:
        name = im.fresh(f"{node.output[0]}_pad_ones", "binding")
        im.lines.append((name, f"sum u : 1 . conv2d({_ones(im, (H, W))}, "
                                 f"{_ones(im, (1, 1, 1))}, {P})[u]", name))
        im.derived[key] = name
    return im.derived[key]


def _padded(im, node, x: _T, P: int, fill: str | None) -> str:
    """``x`` with ``P`` zeros on each side of its last two dimensions, as a binding: each
    H×W plane padded by ``conv2d`` with the 1×1 kernel ``1`` (``sum u : 1 . conv2d(a, one,
    P)[u]``: a single product by 1, exact), so the zeros are placed where ``conv2d`` places
    its own. ``fill="-inf"``: ``+ log(ones padded)``, ``0`` inside and ``−inf`` in the
    padding (MaxPool's: ONNX's max ignores the padding; a weight or const is finite, so the
    infinity is computed)."""
    H, W = x.shape[-2:]
    base = node.output[0]
    outer = x.shape[:-2]
    idx = [f"i{j}" for j in range(len(outer))]
    plane = x.text + "".join(f"[{i}]" for i in idx)
    body = f"(sum u : 1 . conv2d({plane}, {_ones(im, (1, 1, 1))}, {P})[u])"
    if fill == "-inf":
        key = ("-inf", H, W, P)
        if key not in im.derived:
            ninf = im.fresh(f"{base}_pad_ninf", "binding")
            im.lines.append((ninf, f"log({_padded_ones(im, node, H, W, P)})", ninf))
            im.derived[key] = ninf
        body += f" + {im.derived[key]}"
    name = im.fresh(f"{base}_padded", "binding")
    im.lines.append((name, _fors(idx, outer, body), name))
    return name


def _pool(im, node, a, layer):
    if len(node.output) > 1 and node.output[1]:
        im.fail(node, "the Indices output is not supported")
    x = im.operand(node, 0)
    k = a.get("kernel_shape")
    if not k or len(k) != 2 or k[0] != k[1]:
        im.fail(node, f"kernel_shape={k}: only a square 2-D window is supported")
    s = a.get("strides", [1, 1])
    if len(s) != 2 or s[0] != s[1]:
        im.fail(node, f"strides={s}: only the same stride on both axes is supported")
    im.only(node, a, {"kernel_shape": lambda v: True, "strides": lambda v: True,
                        "pads": lambda p: True, "ceil_mode": lambda c: c == 0,
                        "dilations": lambda d: all(v == 1 for v in d),
                        "auto_pad": lambda p: True,
                        "storage_order": lambda v: True,
                        "count_include_pad": lambda v: True})
    _spatial(im, node, x, "pooling")
    kk, ss = k[0], s[0]
    H, W = x.shape[-2:]
    P = _pool_pad(im, node, a, kk, ss, H, W)
    if kk > H + 2 * P or kk > W + 2 * P:
        im.fail(node, f"the window {kk}×{kk} does not fit in {H}×{W}"
                  + (f" padded by {P}" if P else ""))
    out = x.shape[:-2] + ((H + 2 * P - kk) // ss + 1, (W + 2 * P - kk) // ss + 1)
    arg = f"{kk}" if kk == ss else f"{kk}, {ss}"
    if W == 1 and (kk, ss) != (1, 1):
        # the plane H×1 is the vector H: the layer would pool the two dimensions before
        im.fail(node, f"pooling an input of spatial shape {H}×{W} (a trailing dimension "
                        f"1 is absorbed in the model language)")
    if not P:
        _bind_layer(im, node, out, f"{layer}({x.text}, {arg})")
        return
    if H == 1 or W == 1:
        im.fail(node, f"padding an input of spatial shape {H}×{W} (a trailing dimension "
                        f"1 is absorbed in the model language)")
    padded = _padded(im, node, x, P, "-inf" if layer == "maxpool" else None)
    if layer == "maxpool" or a.get("count_include_pad", 0):
        _bind_layer(im, node, out, f"{layer}({padded}, {arg})")
        return
    # count_include_pad=0: the mean of the window's elements that are not padding, Σ/n:
    # the mean of all k² times recip of the mean of the padded ones (n/k²)
    base = node.output[0]
    cnt = im.fresh(f"{base}_pad_count", "binding")
    im.lines.append((cnt, f"{layer}({_padded_ones(im, node, H, W, P)}, {arg})", cnt))
    pooled = im.fresh(f"{base}_pooled", "binding")
    im.lines.append((pooled, f"{layer}({padded}, {arg})", pooled))
    idx = [f"i{j}" for j in range(len(out))]
    at = "".join(f"[{i}]" for i in idx)
    body = f"{pooled}{at} * recip({cnt}[{idx[-2]}][{idx[-1]}])"
    im.bind(node, 0, out, _fors(idx, out, body))


def _bind_layer(im, node, shape, expr: str) -> None:
    """Bind a pooling: its output …×M′×1 keeps the trailing 1 (the layer's shape, not
    absorbed), so it is read into the language's shape, element by element."""
    if shape[-1] != 1:
        im.bind(node, 0, shape, expr)
        return
    raw = im.fresh(f"{node.output[0]}_pooled", "binding")
    im.lines.append((raw, expr, raw))
    idx = [f"i{j}" for j in range(len(shape))]
    im.bind(node, 0, shape, _fors(idx, shape, raw + "".join(f"[{i}]" for i in idx)))


def op_MaxPool(im, node, a):
    _pool(im, node, a, "maxpool")


def op_AveragePool(im, node, a):
    _pool(im, node, a, "avgpool")


HANDLERS = {
    "Conv": op_Conv,
    "MaxPool": op_MaxPool,
    "AveragePool": op_AveragePool,
}

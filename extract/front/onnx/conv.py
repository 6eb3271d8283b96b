"""Convolution and pooling: ``Conv`` as the ``conv2d`` layer, ``MaxPool``/``AveragePool`` as the
``maxpool``/``avgpool`` layers, padded (when they are) by a 1×1 ``conv2d`` of ones.

    Conv(x, W, B) {pads 1,1,1,1}   ->   out = conv2d(x, W, B, 1)
    MaxPool(x) {kernel 2, stride 2} ->  out = maxpool(x, 2)
"""
from __future__ import annotations

import numpy as np

from .core import _T, _fors, _lang, _root, _shape_text

SUPPORTED = {
    "Conv": "2-D, the same stride on both axes, dilation 1; groups (depthwise included); "
            "padding per side (auto_pad SAME too); 1-D (N×C×L) as planes 1×L",
    "MaxPool": "2-D, square window and stride; padding per side, smaller than the window "
               "(-inf: padded by conv2d, + log of padded ones); ceil mode",
    "AveragePool": "2-D, square window and stride; padding per side, smaller than the window "
                   "(zeros: padded by conv2d), count_include_pad 0 or 1; ceil mode",
    "GlobalAveragePool": "2-D: the sum over the plane / its size",
    "GlobalMaxPool": "2-D: max over the plane",
    "ConvTranspose": "2-D, group 1, dilation 1, the same stride on both axes, pads and "
                     "output_padding: the zero-stuffed input convolved with the flipped kernel",
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


def _pads4(im, node, a, kernel, stride: int, H: int, W: int) -> tuple[int, int, int, int]:
    """The padding (top, left, bottom, right) of a Conv or a pooling: ``pads`` (ONNX's order:
    begins, then ends), or ``auto_pad`` SAME (ONNX's: the total of a dimension ``n`` is
    ``max((⌈n/s⌉ − 1)·s + k − n, 0)``, its half, rounded down, before for SAME_UPPER)."""
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        lo, hi = [], []
        for n, k in zip((H, W), kernel):
            total = max((-(-n // stride) - 1) * stride + k - n, 0)
            lo.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
            hi.append(total - lo[-1])
        return tuple(lo + hi)
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto != "NOTSET":
        im.fail(node, f"auto_pad={auto!r} is not supported")
    pads = list(a.get("pads", [0] * 4))
    if len(pads) != 4:
        im.fail(node, f"pads={pads}: 2-D takes four pads")
    if any(p < 0 for p in pads):
        im.fail(node, f"pads={pads}: a negative padding")
    return tuple(pads)


def _pads_text(pads) -> str:
    return f"pads={list(pads)}"


def op_Conv(im, node, a):
    x, w = im.operand(node, 0), im.operand(node, 1)
    b = im.operand(node, 2) if len(node.input) > 2 and node.input[2] else None
    if len(w.shape) == 3:
        _conv1d(im, node, a, x, w, b)
        return
    _conv2d(im, node, a, x, w, b)


def _conv1d(im, node, a, x: _T, w: _T, b: _T | None):
    """A 1-D ``Conv`` (N×C×L by U×C×k: PyTorch's ``Conv1d``) as the 2-D one of planes 1×L by
    the kernel U×C×1×k, its output U×1×L′ read back as U×L′:

        Conv(x, W) {pads 1,1}  ->  x_rows = for i : C . for j : 1 . x[i]
                                   out_conv = conv2d(x_rows, W_rows, 1 …)   (W_rows: U×C×1×k)
                                   out = for i : U . (sum u : 1 . out_conv[i][u])"""
    k = a.get("kernel_shape", [w.shape[2]])
    if len(k) != 1:
        im.fail(node, f"kernel_shape={list(k)} of a kernel of shape {w.shape}")
    r = len(x.shape)
    per = not im.batch and r == 3
    if r != (3 if not im.batch else 2):
        im.fail(node, f"a 1-D convolution of a tensor of shape "
                      f"{((1,) if im.batch else ()) + x.shape}: N×C×L is supported")
    if not w.const:
        im.fail(node, f"a computed kernel of shape {'×'.join(map(str, w.shape))}: a 1-D "
                      f"convolution's kernel must be a constant (an initializer)")
    C, L = x.shape[-2:]
    n = x.shape[0] if per else None
    each, at = (f"for n : {n} . ", "[n]") if per else ("", "")
    rows = im.fresh(f"{node.output[0]}_rows", "binding")
    im.lines.append((rows, f"{each}for i : {C} . for j : 1 . {im.ref(x, node)}{at}[i]", rows))
    x2 = _T(((n,) if per else ()) + (C, 1, L), rows)
    w2 = _T(w.shape[:2] + (1, w.shape[2]), w.text, w.value.reshape(w.shape[:2] + (1, w.shape[2])),
            w.fixed)
    a2 = dict(a)
    a2["kernel_shape"] = [1, k[0]]
    for key, value, to2d in (("strides", 1, lambda v: [v[0], v[0]]),
                             ("dilations", 1, lambda v: [1, v[0]]),
                             ("pads", 2, lambda v: [0, v[0], 0, v[1]])):
        if key in a:
            if len(a[key]) != value:
                im.fail(node, f"{key}={list(a[key])} of a 1-D convolution (it takes {value})")
            a2[key] = to2d(list(a[key]))
    out = _conv2d(im, node, a2, x2, w2, b)
    U, Lo = out.shape[-3], out.shape[-1]
    shape = ((n,) if per else ()) + (U, Lo)
    if Lo == 1:   # U×1×1 and U×1: both the vector U in the language
        im.env[node.output[0]] = _T(shape, out.text)
        return
    im.bind(node, 0, shape, f"{each}for i : {U} . (sum u : 1 . {out.text}{at}[i][u])")


def _conv2d(im, node, a, x: _T, w: _T, b: _T | None) -> _T:
    ones = lambda v: all(s == 1 for s in v)  # noqa: E731
    same = lambda v: len(set(v)) == 1  # noqa: E731
    im.only(node, a, {"strides": same, "dilations": ones, "group": lambda g: g >= 1,
                        "kernel_shape": lambda k: len(k) == 2, "pads": lambda p: True,
                        "auto_pad": lambda p: True})
    if len(w.shape) != 4:
        im.fail(node, f"a kernel of shape {w.shape}: only 2-D convolutions (kernel "
                  f"U×C×kh×kw) are supported")
    stride = a.get("strides", [1, 1])[0]
    per = _spatial(im, node, x, "a convolution")
    C, H, W = x.shape[-3:]
    group = a.get("group", 1)
    if w.shape[1] * group != C:
        im.fail(node, f"the kernel has {w.shape[1]} channels"
                + (f" per group, {group} groups" if group > 1 else "") + f", the input {C}")
    U, kh, kw = w.shape[0], w.shape[2], w.shape[3]
    pads = _pads4(im, node, a, (kh, kw), stride, H, W)
    pad = pads[0]
    if len(set(pads)) != 1:
        if W == 1:
            im.fail(node, f"{_pads_text(pads)} of an input of spatial shape {H}×{W} (a "
                          f"trailing dimension 1 is absorbed in the model language)")
        t, l, b_, r = pads
        x = _T(x.shape[:-2] + (H + t + b_, W + l + r), _padded4(im, node, x, pads, None))
        H, W, pad = H + t + b_, W + l + r, 0
    if group > 1:
        _grouped(im, node, x, w, b, pad, stride, group, per)
        return im.env[node.output[0]]
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
        return im.bind(node, 0, shape, conv)
    # conv2d's output U×H′×1 (or, transposed, U×W′×H′) keeps its trailing 1: read into
    # the language's shape of U×H′×W′, element by element
    raw = im.fresh(f"{node.output[0]}_conv", "binding")
    im.lines.append((raw, conv, raw))
    return im.bind(node, 0, shape, f"{each}for i : {out[0]} . for j : {out[1]} . "
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
        im.params[p] = im.stored(value)
        shape = "x".join(map(str, value.shape))
        if not w.fixed:
            im.decls.append(f"param  {p} : {shape}" + ("   -- transposed (an input "
                              "H×1 is convolved as 1×H)" if flip else ""))
        else:
            im.decls.append(f"const  {p} : {shape}   -- a constant of the graph (its "
                              f"value with the weights)" + (", transposed" if flip else ""))
            im.consts.append(p)
    return im.derived[key]


def _onehot_kernel(im, pads) -> str:
    """The const ``1×kh×kw`` kernel, 1 at ``(P − top, P − left)`` and 0 elsewhere, with which
    ``conv2d(a, E, P)`` (``P`` the largest pad) places ``a`` with ``pads`` (top, left, bottom,
    right) around it: ``kh = 2P − top − bottom + 1`` (declared once per padding)."""
    t, l, b, r = pads
    P = max(0, *pads)
    kh, kw = 2 * P - t - b + 1, 2 * P - l - r + 1
    key = ("onehot", tuple(pads))
    if key not in im.derived:
        e = np.zeros((1, kh, kw), np.float32)
        e[0, P - t, P - l] = 1
        p = im.fresh(f"pad_at_{t}_{l}_{b}_{r}", "param")
        im.derived[key] = p
        im.params[p] = e
        im.decls.append(f"const  {p} : 1x{kh}x{kw}   -- 1 at ({P - t}, {P - l}): pads "
                        f"{t}, {l}, {b}, {r} (top, left, bottom, right)")
        im.consts.append(p)
    return im.derived[key]


def _place(im, plane: str, pads) -> str:
    """A plane with ``pads`` zeros around it (top, left, bottom, right): ``sum u : 1 .
    conv2d(plane, E, P)[u]``, ``E`` the one-hot kernel of ``_onehot_kernel`` (P zeros on each
    side by the layer, then the window at the offset where the plane sits: each element is
    ``1·a`` plus products by ``0``, so exact for finite values)."""
    return f"(sum u : 1 . conv2d({plane}, {_onehot_kernel(im, pads)}, {max(0, *pads)})[u])"


def _padded4(im, node, x: _T, pads, fill: str | None) -> str:
    """``x`` (…×H×W) with ``pads`` (top, left, bottom, right) around each plane, as a binding;
    the same on every side is ``_padded``'s. ``fill="-inf"``: ``+ log`` of the ones padded so
    (``0`` inside, ``−inf`` around: MaxPool's)."""
    if len(set(pads)) == 1 and pads[0] >= 0:
        return _padded(im, node, x, pads[0], fill)
    H, W = x.shape[-2:]
    base = node.output[0]
    outer = x.shape[:-2]
    idx = [f"i{j}" for j in range(len(outer))]
    body = _place(im, x.text + "".join(f"[{i}]" for i in idx), pads)
    if fill == "-inf":
        key = ("-inf4", H, W, tuple(pads))
        if key not in im.derived:
            ninf = im.fresh(f"{base}_pad_ninf", "binding")
            im.lines.append((ninf, f"log({_padded_ones4(im, node, H, W, pads)})", ninf))
            im.derived[key] = ninf
        body += f" + {im.derived[key]}"
    name = im.fresh(f"{base}_padded", "binding")
    im.lines.append((name, _fors(idx, outer, body), name))
    return name


def _padded_ones4(im, node, H: int, W: int, pads, ones=None) -> str:
    """Ones of shape H×W with ``pads`` zeros around (1 inside, 0 in the padding); with
    ``ones`` (pads), the ones cover the plane and that much padding (an average's
    ``count_include_pad=1``) and the zeros are the rest (ceil mode's extra positions)."""
    if ones is not None:
        t, l, b, r = ones
        inner = _T((H + t + b, W + l + r), _ones(im, (H + t + b, W + l + r)))
        rest = tuple(p - q for p, q in zip(pads, ones))
        key = ("padded ones4", H, W, tuple(pads), ones)
        if key not in im.derived:
            name = im.fresh(f"{node.output[0]}_pad_ones", "binding")
            im.lines.append((name, _place(im, inner.text, rest), name))
            im.derived[key] = name
        return im.derived[key]
    if len(set(pads)) == 1:
        return _padded_ones(im, node, H, W, pads[0])
    key = ("padded ones4", H, W, tuple(pads), None)
    if key not in im.derived:
        name = im.fresh(f"{node.output[0]}_pad_ones", "binding")
        im.lines.append((name, _place(im, _ones(im, (H, W)), pads), name))
        im.derived[key] = name
    return im.derived[key]


def _grouped(im, node, x: _T, w: _T, b, pad: int, stride: int, G: int, per: bool) -> None:
    """A convolution in ``G`` groups (depthwise: ``G`` = C): the input read as ``G×Cg×H×W``
    (``block(for k : C . x[k][h][w], g)[c]``: channel ``g·Cg + c``), the kernel declared as
    ``G×Ug×Cg×kh×kw`` and the bias as ``G×Ug`` (ONNX's U×Cg×kh×kw and U, reshaped: the same
    numbers), one ``conv2d`` per group, ``for g : G . conv2d(xg[g], K[g], b[g], P, s)``, and
    its ``G×Ug×H′×W′`` read as ``U×H′×W′`` (``y[div(o, Ug)][mod(o, Ug)]``). An input H×1
    (the model language's H: a trailing 1 is absorbed) is convolved transposed, as an
    ungrouped one is (planes 1×H, the kernel declared transposed, ``G×Ug×Cg×kw×kh``); an
    output ending in 1 is read element by element (conv2d's keeps its trailing 1)."""
    C, H, W = x.shape[-3:]
    U, Cg, kh, kw = w.shape
    if U % G:
        im.fail(node, f"{U} output channels do not split into {G} groups")
    Ug = U // G
    Ho, Wo = (H + 2 * pad - kh) // stride + 1, (W + 2 * pad - kw) // stride + 1
    flip = W == 1
    base = node.output[0]
    if flip:
        K = _reshaped_param(im, node, w, (G, Ug, Cg, kw, kh), "kernel",
                            lambda v: v.transpose(0, 1, 3, 2), "in groups, transposed")
    else:
        K = _reshaped_param(im, node, w, (G, Ug, Cg, kh, kw), "kernel")
    args = [f"{K}[i0]"]
    if b is not None:
        args.append(f"{_reshaped_param(im, node, b, (G, Ug), 'bias')}[i0]")
    if pad or stride != 1:
        args.append(str(pad))
    if stride != 1:
        args.append(str(stride))
    n = x.shape[0] if per else None
    each = f"for n : {n} . " if per else ""
    at = "[n]" if per else ""
    xg = im.fresh(f"{base}_groups", "binding")
    if flip:    # the plane of channel k is x[k] (H) or x[k] a scalar (1×1): planes 1×H
        plane = "for j : 1x1 . " if H == 1 else f"for j : 1 . for i2 : {H} . "
        read = f"{x.text}{at}[k]" + ("" if H == 1 else "[i2]")
        im.lines.append((xg, f"{each}for i0 : {G} . for i1 : {Cg} . {plane}"
                             f"block(for k : {C} . {read}, i0)[i1]", xg))
    else:
        im.lines.append((xg, f"{each}for i0 : {G} . for i1 : {Cg} . for i2 : {H} . "
                             f"for i3 : {W} . block(for k : {C} . {x.text}{at}[k][i2][i3], "
                             f"i0)[i1]", xg))
    y = im.fresh(f"{base}_grouped", "binding")
    im.lines.append((y, f"{each}for i0 : {G} . conv2d({xg}{at}[i0], {', '.join(args)})", y))
    shape = ((n,) if per else ()) + (U, Ho, Wo)
    o = f"{y}{at}[div(i, {Ug})][mod(i, {Ug})]"
    if not flip and Wo != 1:
        im.bind(node, 0, shape, f"{each}for i : {U} . {o}")
        return
    # conv2d's output Ug×H′×1 (transposed: Ug×W′×H′) keeps its trailing 1: element by element
    im.bind(node, 0, shape, f"{each}for i : {U} . for j : {Ho} . for k : {Wo} . "
                            f"{o}[{'k][j' if flip else 'j][k'}]")


def _reshaped_param(im, node, t: _T, shape, what: str, order=None, how="in groups") -> str:
    """A constant of the graph declared in another shape (the same numbers in the same order:
    a grouped convolution's kernel and bias; or, with ``order``, permuted: a transposed
    convolution's flipped kernel), once."""
    if not t.const:
        im.fail(node, f"a computed {what} (a constant is required)")
    key = ("reshaped", id(t.value), tuple(shape), how)
    if key not in im.derived:
        root = _root(t.value)
        flat = im.vector(t.value) if what == "bias" and order is None else None
        if flat is not None:        # declared already: its groups are blocks of it
            name = im.fresh(f"{flat}_in{shape[0]}", "binding")
            im.lines.append((name, f"for i0 : {shape[0]} . block({flat}, i0)", name))
            im.derived[key] = name
            return name
        if root in im.declared or root in im.kernels:
            im.fail(node, f"the {what} {t.text!r} is read by another operation too (two "
                          f"parameters of one array)")
        p = im.fresh((t.text or "w") + ("_g" if order is None else "_f"), "param")
        im.derived[key] = p
        im.kernels[root] = f"{p} : {'x'.join(map(str, shape))}"
        if what == "bias" and order is None and len(shape) == 2:
            im.grouped[root] = (p, shape[0], shape[1])
        im.alive.append(t.value)
        v = t.value if order is None else order(t.value)
        im.params[p] = im.stored(v.reshape(shape))
        dims = "x".join(map(str, shape))
        if not t.fixed:
            im.decls.append(f"param  {p} : {dims}   -- {t.text}, {how}")
        else:
            im.decls.append(f"const  {p} : {dims}   -- a constant of the graph, {how}")
            im.consts.append(p)
    return im.derived[key]


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


def op_ConvTranspose(im, node, a):
    """The transposed convolution as a convolution: the input with ``s − 1`` zeros after each
    element (per axis: its stride) (``x[c][div(y, s)][div(z, s)] * m[mod(y, s)][mod(z, s)]``, ``m`` a const ``s×s``,
    1 at (0, 0): ``Hs×Ws``), placed with ``kh − 1 − pads`` around it (``_padded4``: a crop where
    negative), then ``conv2d`` with the kernel declared flipped and its two channel axes
    swapped (``W′[o][c][u][v] = W[c][o][kh−1−u][kw−1−v]``: the same numbers, another order,
    so it trains as the same parameters); stride 1 and the same padding everywhere is one
    ``conv2d(x, W′, b, kh − 1 − pad)``. ``output_shape`` and ``auto_pad`` SAME give the pads
    as ONNX computes them."""
    ones = lambda v: all(d == 1 for d in v)  # noqa: E731
    im.only(node, a, {"strides": lambda v: len(v) == 2, "dilations": ones,
                      "group": lambda g: g == 1, "kernel_shape": lambda k: len(k) == 2,
                      "pads": lambda p: True, "output_padding": lambda p: True,
                      "output_shape": lambda v: len(v) == 2,
                      "auto_pad": lambda p: p in (b"NOTSET", "NOTSET", b"SAME_UPPER",
                                                  "SAME_UPPER", b"SAME_LOWER", "SAME_LOWER")})
    x, w = im.operand(node, 0), im.operand(node, 1)
    b = im.operand(node, 2) if len(node.input) > 2 and node.input[2] else None
    if len(w.shape) != 4:
        im.fail(node, f"a kernel of shape {w.shape}: only 2-D (C×U×kh×kw) is supported")
    per = _spatial(im, node, x, "a transposed convolution")
    C, H, W = x.shape[-3:]
    if w.shape[0] != C:
        im.fail(node, f"the kernel has {w.shape[0]} input channels, the input {C}")
    U, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    sh, sw = a.get("strides", [1, 1])
    op = list(a.get("output_padding", [0, 0]))
    t, l, bo, r = (list(a.get("pads", [0] * 4)) + [0] * 4)[:4]
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if "output_shape" in a or auto != "NOTSET":
        # as ONNX's reference: the total padding that makes the output output_shape (SAME:
        # input·stride), the larger half before (SAME_UPPER: after)
        want = list(a["output_shape"]) if "output_shape" in a else [H * sh, W * sw]
        pads = []
        for n, s_, k, o, m_ in ((H, sh, kh, op[0], want[0]), (W, sw, kw, op[1], want[1])):
            total = s_ * (n - 1) + o + k - m_
            pads.append((total // 2, total - total // 2) if auto == "SAME_UPPER"
                        else (total - total // 2, total // 2))
        (t, bo), (l, r) = pads
    if H == 1 or W == 1:
        im.fail(node, f"an input of spatial shape {H}×{W} (a trailing dimension 1 is absorbed "
                      f"in the model language)")
    if w.const:
        K = _reshaped_param(im, node, w, (U, C, kh, kw), "kernel",
                            lambda v: v.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1], "flipped")
    else:
        # a computed kernel, flipped by const anti-diagonal matrices (the language reverses
        # no index): sum p . sum q . J[u][p] * J[v][q] * w[c][o][p][q], exact
        if kw == 1:
            im.fail(node, f"a computed kernel of shape {w.shape} (a trailing dimension 1 is "
                          f"absorbed in the model language)")
        Jh = im.ref(_T((kh, kh), f"{node.output[0]}_flip{kh}", np.eye(kh)[::-1].copy(),
                       True), node)
        Jw = Jh if kw == kh else im.ref(_T((kw, kw), f"{node.output[0]}_flip{kw}",
                                           np.eye(kw)[::-1].copy(), True), node)
        K = im.fresh(f"{node.output[0]}_kernel", "binding")
        im.lines.append((K, f"for i0 : {U} . for i1 : {C} . for i2 : {kh} . for i3 : {kw} . "
                            f"sum j : {kh} . sum k : {kw} . {Jh}[i2][j] * {Jw}[i3][k] * "
                            f"{w.text}[i1][i0][j][k]", K))
    args = [K] + ([im.ref(b, node)] if b is not None else [])
    Ho, Wo = (H - 1) * sh + kh - t - bo + op[0], (W - 1) * sw + kw - l - r + op[1]
    each = f"for n : {x.shape[0]} . " if per else ""
    at = "[n]" if per else ""
    if min(Ho, Wo) < 1:
        im.fail(node, f"pads {[t, l, bo, r]} for an output {Ho}×{Wo}")
    pads = (kh - 1 - t, kw - 1 - l, kh - 1 - bo + op[0] - (sh - 1),
            kw - 1 - r + op[1] - (sw - 1))
    src = x
    if (sh, sw) != (1, 1):
        m = np.zeros((sh, sw))
        m[0, 0] = 1
        mk = im.ref(_T((sh, sw), f"{node.output[0]}_stuff", m, True), node)
        ix = f"[mod(i1, {sh})]" + (f"[mod(i2, {sw})]" if sw > 1 else "")   # (sh×1 is sh)
        name = im.fresh(f"{node.output[0]}_stuffed", "binding")
        im.lines.append((name, f"{each}for i0 : {C} . for i1 : {H * sh} . for i2 : {W * sw} . "
                               f"{x.text}{at}[i0][div(i1, {sh})][div(i2, {sw})] * {mk}{ix}",
                         name))
        src = _T(x.shape[:-2] + (H * sh, W * sw), name)
    if len(set(pads)) == 1 and pads[0] >= 0:
        args += [str(pads[0])] if pads[0] else []
        conv = f"{each}conv2d({src.text}{at}, {', '.join(args)})"
    else:
        padded = _padded4(im, node, src, pads, None)
        conv = f"{each}conv2d({padded}{at}, {', '.join(args)})"
    if Wo == 1:
        im.fail(node, f"an output of spatial shape {Ho}×{Wo} (a trailing dimension 1 is "
                      f"absorbed in the model language)")
    im.bind(node, 0, x.shape[:-3] + (U, Ho, Wo), conv)


def _pool(im, node, a, layer):
    """``maxpool``/``avgpool`` of the input, padded first when it is (see ``_padded4``): the
    same on every side as the layers do (``conv2d`` by a 1×1 kernel of 1), per side by a
    one-hot kernel. Ceil mode (ONNX's: the last window starts inside the input or its
    padding) pads the end further, so that the layer's floor mode counts the windows ceil mode
    does; those extra positions are ignored, as ONNX's reference ignores them: ``−inf`` for the
    maximum, and left out of an average's count (the mean of the window's elements times
    ``recip`` of the mean of ones marking what is counted: the input, with
    ``count_include_pad=1`` its padding too)."""
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
                        "pads": lambda p: True, "ceil_mode": lambda c: c in (0, 1),
                        "dilations": lambda d: all(v == 1 for v in d),
                        "auto_pad": lambda p: True,
                        "storage_order": lambda v: True,
                        "count_include_pad": lambda v: True})
    _spatial(im, node, x, "pooling")
    kk, ss = k[0], s[0]
    H, W = x.shape[-2:]
    pads = _pads4(im, node, a, (kk, kk), ss, H, W)
    t, l, b, r = pads
    if max(pads) >= kk:
        im.fail(node, f"{_pads_text(pads)}: a padding as large as the window {kk}×{kk} (a "
                      f"window of padding alone)")
    Hp, Wp = H + t + b, W + l + r
    if kk > Hp or kk > Wp:
        im.fail(node, f"the window {kk}×{kk} does not fit in {H}×{W}"
                  + (f" padded by {list(pads)}" if any(pads) else ""))
    size = []
    for n, lo, hi in ((H, t, b), (W, l, r)):
        m = (n + lo + hi - kk) // ss + 1
        if a.get("ceil_mode", 0):
            m = -(-(n + lo + hi - kk) // ss) + 1
            if (m - 1) * ss >= n + lo:        # the last window starts in the end padding
                m -= 1
        size.append(m)
    extra = ((size[0] - 1) * ss + kk - Hp, (size[1] - 1) * ss + kk - Wp)
    full = (t, l, b + max(extra[0], 0), r + max(extra[1], 0))
    out = x.shape[:-2] + tuple(size)
    arg = f"{kk}" if kk == ss else f"{kk}, {ss}"
    if W == 1 and (kk, ss) != (1, 1):
        # the plane H×1 is the vector H: the layer would pool the two dimensions before
        im.fail(node, f"pooling an input of spatial shape {H}×{W} (a trailing dimension "
                        f"1 is absorbed in the model language)")
    if not any(full):
        _bind_layer(im, node, out, f"{layer}({x.text}, {arg})")
        return
    if H == 1 or W == 1:
        im.fail(node, f"padding an input of spatial shape {H}×{W} (a trailing dimension "
                        f"1 is absorbed in the model language)")
    ceil = full != pads
    include = a.get("count_include_pad", 0)
    if layer == "maxpool":
        padded = _padded4(im, node, x, full, "-inf")
        _bind_layer(im, node, out, f"{layer}({padded}, {arg})")
        return
    padded = _padded4(im, node, x, full, None)
    if include and not ceil:
        _bind_layer(im, node, out, f"{layer}({padded}, {arg})")
        return
    # the mean of the window's counted elements, Σ/n: the mean of all k² times recip of the
    # mean of the ones that mark them (n/k²)
    if include:
        counted = _padded_ones4(im, node, H, W, full, pads)
    else:
        counted = _padded_ones4(im, node, H, W, full)
    base = node.output[0]
    cnt = im.fresh(f"{base}_pad_count", "binding")
    im.lines.append((cnt, f"{layer}({counted}, {arg})", cnt))
    pooled = im.fresh(f"{base}_pooled", "binding")
    im.lines.append((pooled, f"{layer}({padded}, {arg})", pooled))
    idx = [f"i{j}" for j in range(len(out))]
    at = "".join(f"[{i}]" for i in idx)
    body = f"{pooled}{at} * recip({cnt}[{idx[-2]}][{idx[-1]}])"
    im.bind(node, 0, out, _fors(idx, out, body))


def _global(im, node, a, how: str) -> None:
    """``GlobalAveragePool``: ``(sum r : H×W . x[c][r]) / (H·W)`` per channel;
    ``GlobalMaxPool``: ``max r : H×W . x[c][r]`` (the output …×C×1×1)."""
    im.only(node, a, {})
    x = im.operand(node, 0)
    rank = len(x.shape) + im.batch
    if rank < 3:
        im.fail(node, f"an input of rank {rank}: N×C×… is required")
    lead = x.shape[:2 - im.batch]                # (C,) or (N, C)
    spatial = x.shape[len(lead):]
    out = lead + (1,) * len(spatial)
    if x.const:
        f = np.mean if how == "avg" else np.max
        im.out_const(node, f(x.value, axis=tuple(range(len(lead), len(x.shape))),
                             keepdims=True))
        return
    sl = _lang(spatial)
    idx = [f"i{j}" for j in range(len(lead))]
    n = int(np.prod(spatial))
    e = x.text + "".join(f"[{i}]" for i in idx[:len(_lang(x.shape))])
    if not sl:                                   # a plane 1×1: the element itself
        body = e
    elif how == "avg":
        body = f"(sum r : {_shape_text(sl)} . {e}[r]) / {n}" if n > 1 else f"{e}[r]"
    else:
        body = f"max r : {_shape_text(sl)} . {e}[r]"
    im.bind(node, 0, out, _fors(idx, lead, body))


def op_GlobalAveragePool(im, node, a):
    _global(im, node, a, "avg")


def op_GlobalMaxPool(im, node, a):
    _global(im, node, a, "max")


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
    "GlobalAveragePool": op_GlobalAveragePool,
    "GlobalMaxPool": op_GlobalMaxPool,
    "ConvTranspose": op_ConvTranspose,
}

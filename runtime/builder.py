"""Write a model file (``*.model``, see extract/front/frontend.py) from Python, layer by layer.

    from runtime.builder import ModelBuilder
    b = ModelBuilder("mlp")
    x = b.input("x", (28, 28)); y = b.target("y", 10)
    h = b.bind("h", b.logistic(b.dense(x, 128)))        model mlp
    out = b.output(b.logistic(b.dense(h, 10)))          input  x : 28x28
    b.loss(b.sqerr(out, y))                             target y : 10
    b.save("mlp.model")                  ->             param  w1 : 128x28x28
                                                        param  b1 : 128
                                                        param  w2 : 10x128
                                                        param  b2 : 10
                                                        z1 = dense(w1, x, b1)
                                                        h = logistic(z1)
                                                        z2 = dense(w2, h, b2)
                                                        output out = logistic(z2)
                                                        loss loss = sqerr(out, y)

    m = b.load(init="random", seed=0)    # compile, generate, build: runtime.load(b, ...)

The text is what a user would write by hand, and the model file stays the one contract: the
Agda elaborator (``Main model``) is the checker. Shapes are inferred here only to shape and
name the parameters and to raise ``ValueError`` early, naming the layer, for obvious mistakes.
The rules are the elaborator's: ``dense(W, x)`` with W of shape (u, *s) and x of shape s has
shape (u,); ``conv(x, K)`` with x of shape r and K of shape (u, *s), len(s) == len(r), has
shape (u, *(r_i - s_i + 1)); ``conv2d``, ``avgpool`` and ``maxpool`` follow
docs/model-format.md §4 (padding, stride, floor mode); ``maxall``, ``logsumexp`` and ``sqerr``
have shape (1,), and so has ``cross_entropy(z, y)`` of a vector, the stable softmax
cross-entropy of logits (the layer ``softmax_ce(z, y)``; of a matrix, one per row), and
``log_softmax(z)`` has ``z``'s. A max-reduction of another body (``max i : S . e``) is written
with ``expr``, like ``sum``. A Python number is a number of the model file (``x * 0.5``,
``h + 1e-5``: written as ``repr`` writes it, the shortest decimal that reads back as it), which
takes the shape of its neighbour.

``const(name, shape)`` declares a fixed array among the parameters (its value given with the
weights, never trained). The n-th layer with parameters (dense, conv or conv2d) declares
``w<n>``/``b<n>`` (dense) or ``k<n>``/``b<n>`` (conv, conv2d), unless told ``weight="fc"``,
``bias="b"``, ``bias=False`` (none), or given a declared parameter (``dense(x, w)``,
``conv(x, k)``, ``bias=b``).

Every layer that is a sum or reads a window (dense, conv, conv2d, avgpool, maxpool, maxall,
logsumexp, softmax_ce, log_softmax) is its own binding: the extractor refuses a sum written inside another expression, which
would be recomputed for every element of the result (and the gradient of ``logistic`` needs
the value of its argument). Unless bound by name first (``bind("c11", conv(...))``,
``output(dense(...))``), such a layer is bound when it is first used: the pre-activation of
the n-th dense/conv as ``z<n>`` (the next free ``z<k>`` if that name is taken), a pooling as
``p1``, ``p2``, ..., a maxall as ``m1``, ..., a logsumexp as ``lse1``, ..., a cross-entropy as
``ce1``, ..., a log-softmax as ``ls1``, .... A layer reads its input many times, so an input
that is not a name is bound first (``h1``, ``h2``, ...). Elementwise operations (``logistic``,
``relu``, ``exp``, ``log``, ``recip``, ``sqrt``, ``detach``, ``erf``, ``max``, ``+``, ``-``, ``*``, unary ``-``,
``/ N``) stay inline, on names; ``tanh``, a layer that reads its input four times, binds a
non-name input.
``bind(name, e)`` names a binding; ``expr(text)`` is the escape hatch for anything else
(``for``, ``sum``, ``max``, ``tile``, ``slide``, ...; written as given, never bound automatically).
Names must be C identifiers not starting with ``d_``; which words are reserved is the
elaborator's and the extractor's to say (``for``, ``sum``, ``tile``, a leading or double
underscore: docs/model-format.md §2; C's keywords are fine, extract/ir/names.py). ``text()`` is the
model file, ``save(path)`` writes it, ``compile()`` returns its dump,
``load(**kw)`` is ``runtime.load(self, **kw)``.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")    # one token of the model language
LOW, ADD, MUL, NEG, ATOM = range(5)        # binding strength, for parentheses


def show_shape(shape) -> str:
    return "?" if shape is None else "x".join(map(str, shape))


def _shape(s) -> tuple:
    t = (s,) if isinstance(s, int) else tuple(s)
    if not t or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in t):
        raise ValueError(f"not a shape: {s!r} (positive integers, like (28, 28) or 10)")
    return t


def _same(what: str, s, t):
    if s is not None and t is not None and s != t:
        raise ValueError(f"{what}: the shapes {show_shape(s)} and {show_shape(t)} differ")
    return s if s is not None else t


class Expr:
    """An expression of the model language: its text, its shape (None when unknown) and, once
    bound or declared, its name (then its text is the name)."""

    def __init__(self, b: "ModelBuilder", text: str, shape, strength: int = ATOM,
                 name: str | None = None, auto: tuple | None = None):
        self.b, self._text, self.shape, self.name = b, text, shape, name
        self.strength = strength
        self.stmt: list | None = None          # [kind, name, text] once bound
        # a sum (layer): bound as <prefix><k>, k >= start, when first used (unless bound)
        self.auto: tuple | None = auto          # (prefix, start)

    def _ref(self) -> str:
        """The text to embed in another expression: a pending sum is bound first."""
        if self.name is None and self.auto is not None:
            prefix, k = self.auto
            while f"{prefix}{k}" in self.b._names:
                k += 1
            self.b.bind(f"{prefix}{k}", self)
        return str(self)

    def __str__(self) -> str:
        return self.name or self._text

    def __repr__(self) -> str:
        return f"Expr({str(self)!r}, shape={self.shape})"

    def _at(self, strength: int) -> str:
        s = self._ref()
        return s if self.name or self.strength >= strength else f"({s})"

    def _bin(self, op: str, other, left: int, right: int, strength: int) -> "Expr":
        other = self.b._as_expr(other)
        shape = _same(f"'{op}'", self.shape, other.shape)
        return Expr(self.b, f"{self._at(left)} {op} {other._at(right)}", shape, strength)

    def __add__(self, o): return self._bin("+", o, ADD, MUL, ADD)
    def __radd__(self, o): return self.b._as_expr(o) + self
    def __sub__(self, o): return self._bin("-", o, ADD, MUL, ADD)
    def __rsub__(self, o): return self.b._as_expr(o) - self
    def __mul__(self, o): return self._bin("*", o, MUL, ATOM, MUL)
    def __rmul__(self, o): return self.b._as_expr(o) * self
    def __neg__(self): return Expr(self.b, f"-{self._at(ATOM)}", self.shape, NEG)

    def __truediv__(self, n: int) -> "Expr":
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"'/': divide by a positive integer, not {n!r}")
        return Expr(self.b, f"{self._at(MUL)} / {n}", self.shape, MUL)

    def __getitem__(self, i) -> "Expr":
        return Expr(self.b, f"{self._at(ATOM)}[{i}]", None)


class ModelBuilder:
    def __init__(self, name: str):
        self.name = self._check_name(name, "model")
        self._names: dict[str, Expr] = {}
        self._data: list = []          # [kind, name, shape] of inputs and targets, in order
        self._params: list = []        # [kind, name, shape] (param or const), in order
        self._stmts: list = []         # [kind, name, text]; kind "", "output" or "loss"
        self._layers = 0
        self._output: Expr | None = None
        self._loss: Expr | None = None

    # names and declarations ------------------------------------------------------------
    @staticmethod
    def _check_name(name: str, what: str) -> str:
        if not isinstance(name, str) or not _IDENT.fullmatch(name) or name.startswith("d_"):
            raise ValueError(f"{what}: {name!r} is not a valid name (a C identifier not "
                             f"starting with d_)")
        return name

    def _claim(self, name: str, e: Expr, what: str) -> Expr:
        self._check_name(name, what)
        if name in self._names:
            raise ValueError(f"{what}: the name {name!r} is already used")
        self._names[name] = e
        return e

    def _new(self, name: str, shape, what: str) -> Expr:
        return self._claim(name, Expr(self, name, shape, name=name), what)

    def input(self, name: str, shape, kind: str = "input") -> Expr:
        """Data: the features (or, as ``target``, what the loss compares the prediction to)."""
        e = self._new(name, _shape(shape), kind)
        self._data.append([kind, name, e.shape])
        return e

    def target(self, name: str, shape) -> Expr:
        return self.input(name, shape, "target")

    def _stored(self, kind: str, name: str, shape) -> Expr:
        e = self._new(name, _shape(shape), kind)
        self._params.append([kind, name, e.shape])
        return e

    def param(self, name: str, shape) -> Expr:
        """A trainable parameter (declared in the order of the calls)."""
        return self._stored("param", name, shape)

    def const(self, name: str, shape) -> Expr:
        """A fixed array (a mask, a filter), declared among the parameters: its value comes
        with the weights (``load(weights={name: array})``), training never changes it."""
        return self._stored("const", name, shape)

    def expr(self, text: str, shape=None) -> Expr:
        """A raw expression (a declared name gives its own Expr)."""
        if text in self._names:
            return self._names[text]
        atom = _IDENT.fullmatch(text) or _NUMBER.fullmatch(text)
        return Expr(self, text, None if shape is None else _shape(shape), ATOM if atom else LOW)

    def _as_expr(self, e) -> Expr:
        if isinstance(e, Expr):
            return e
        if isinstance(e, (int, float)) and not isinstance(e, bool):
            if not math.isfinite(e):
                raise ValueError(f"not a number of a model file: {e!r}")
            # repr: the shortest decimal that reads back as e (0.1, 1e-05); the elaborator
            # refuses what a double does not hold exactly (docs/model-format.md §3)
            text = repr(abs(e)) if isinstance(e, float) else str(abs(e))
            return Expr(self, text, None) if e >= 0 else -Expr(self, text, None)
        raise TypeError(f"not an expression: {e!r}")

    # bindings ---------------------------------------------------------------------------
    def bind(self, name: str, e, kind: str = "") -> Expr:
        """Bind ``e`` to ``name`` (``e`` is then written as ``name`` wherever used next)."""
        e = self._as_expr(e)
        if self._loss is not None:
            raise ValueError(f"{kind or 'binding'} {name}: the loss is the last statement")
        if e.name is not None or e._text in ("0", "1"):     # a name: bind a copy
            e = Expr(self, str(e), e.shape)
        self._claim(name, e, kind or "binding")
        e.name, e.stmt = name, [kind, name, e._text]
        self._stmts.append(e.stmt)
        return e

    def _shaped(self, layer: str, x) -> Expr:
        x = self._as_expr(x)
        if x.shape is None:
            raise ValueError(f"{layer}: the shape of {x} is unknown; give it with "
                             f"expr(text, shape=...)")
        return x

    def _named(self, x: Expr) -> Expr:
        """A layer's input, bound to a name if it is not one yet: a pending sum by its own
        rule (z<n>, p<k>), anything else as h1, h2, ...."""
        x._ref()
        if x.name is None:
            k = 1
            while f"h{k}" in self._names:
                k += 1
            self.bind(f"h{k}", x)
        return x

    def output(self, e, name: str | None = None) -> Expr:
        """Mark the prediction: ``e``'s own binding, or a new one (``out`` by default)."""
        e = self._as_expr(e)
        if self._output is not None:
            raise ValueError(f"output: the model already has an output, {self._output}")
        if e.stmt is not None and e.stmt[0] == "" and name in (None, e.name):
            e.stmt[0] = "output"
        else:
            e = self.bind(name or "out", e, "output")
        self._output = e
        return e

    def loss(self, e, name: str | None = None) -> Expr:
        """The objective (shape 1), the last statement."""
        e = self._as_expr(e)
        if e.shape not in (None, (1,)):
            raise ValueError(f"loss: the objective must have shape 1, found "
                             f"{show_shape(e.shape)}")
        if self._stmts and e.stmt is self._stmts[-1] and e.stmt[0] == "" and \
                name in (None, e.name):
            e.stmt[0] = "loss"
        else:
            e = self.bind(name or "loss", e, "loss")
        self._loss = e
        return e

    # layers -----------------------------------------------------------------------------
    def _layer(self) -> int:
        self._layers += 1
        return self._layers

    def _bias(self, bias, n: int, u: int) -> str:
        if bias is False:
            return ""
        if not isinstance(bias, Expr):
            bias = self.param(bias if isinstance(bias, str) else f"b{n}", u)
        return f", {bias._ref()}"

    def dense(self, x, units, *, weight: str | None = None, bias=True) -> Expr:
        """``dense(W, x, b)``: ``units`` is the number of outputs, or the weight W (an Expr)."""
        x = self._shaped("dense", x)
        ws = units.shape if isinstance(units, Expr) else (*_shape(units), *x.shape)
        if ws is None or ws[1:] != x.shape:
            raise ValueError(f"dense: the weight {units} has shape {show_shape(ws)}, so the "
                             f"input must have shape {show_shape((ws or ())[1:])}; found "
                             f"{show_shape(x.shape)}")
        if isinstance(bias, Expr):
            _same("dense: the bias", bias.shape, ws[:1])
        n, x = self._layer(), self._named(x)
        w = units._ref() if isinstance(units, Expr) else self.param(weight or f"w{n}", ws)
        return Expr(self, f"dense({w}, {x}{self._bias(bias, n, ws[0])})", ws[:1],
                    auto=("z", n))

    def conv(self, x, channels, kernel=None, *, weight: str | None = None, bias=True) -> Expr:
        """``conv(x, K, b)``: ``channels`` outputs and a ``kernel`` (an int k for k×k over the
        last two dimensions, or the kernel's last dimensions; the others are the input's
        own), or the kernel K itself (an Expr) as ``channels``."""
        x = self._shaped("conv", x)
        r = x.shape
        if isinstance(channels, Expr):
            ks = channels.shape or ()
        elif kernel is None:
            raise ValueError("conv: give the kernel's size (kernel=5, say)")
        else:
            t = _shape((kernel,) * min(2, len(r)) if isinstance(kernel, int) else kernel)
            ks = (*_shape(channels), *r[:max(0, len(r) - len(t))], *t)
        if len(ks) != len(r) + 1 or any(si > ri for si, ri in zip(ks[1:], r)):
            raise ValueError(f"conv: a kernel of shape {show_shape(ks)} does not fit the input "
                             f"{x} of shape {show_shape(r)}")
        n, x, k, b = self._kernel("conv", x, channels, ks, weight, bias)
        return Expr(self, f"conv({x}, {k}{b})",
                    (ks[0], *(ri - si + 1 for ri, si in zip(r, ks[1:]))), auto=("z", n))

    def _kernel(self, layer: str, x: Expr, channels, ks: tuple, weight, bias) -> tuple:
        """A convolution's layer number, its input (named), its kernel (declared ``k<n>``
        unless given) and the text of its bias argument (``", b<n>"``, or empty)."""
        if isinstance(bias, Expr):
            _same(f"{layer}: the bias", bias.shape, ks[:1])
        n, x = self._layer(), self._named(x)
        k = channels._ref() if isinstance(channels, Expr) else \
            self.param(weight or f"k{n}", ks)
        return n, x, k, self._bias(bias, n, ks[0])

    def conv2d(self, x, channels, kernel=None, *, padding: int = 0, stride: int = 1,
               weight: str | None = None, bias=True) -> Expr:
        """``conv2d(x, K, b, P, s)``, today's convolution: x of shape C×H×W (or H×W),
        ``channels`` outputs and a ``kernel`` (an int k for k×k, or (kh, kw)), or the kernel K
        itself (an Expr of shape U×C×kh×kw, or U×kh×kw) as ``channels``; ``padding`` zeros on
        each side, ``stride``. Output U×H′×W′, H′ = (H + 2P − kh) // s + 1."""
        x = self._shaped("conv2d", x)
        r = x.shape
        for what, v, low in (("padding", padding, 0), ("stride", stride, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"conv2d: {what} must be an integer >= {low}, not {v!r}")
        if len(r) not in (2, 3):
            raise ValueError(f"conv2d: the input {x} has shape {show_shape(r)}; it must be "
                             f"C×H×W or H×W")
        if isinstance(channels, Expr):
            ks = channels.shape or ()
        elif kernel is None:
            raise ValueError("conv2d: give the kernel's size (kernel=5, say)")
        else:
            t = _shape((kernel, kernel) if isinstance(kernel, int) else kernel)
            ks = (*_shape(channels), *r[:-2], *t)
        if len(ks) != len(r) + 1 or ks[1:-2] != r[:-2] or \
                any(k > n + 2 * padding for k, n in zip(ks[-2:], r[-2:])):
            raise ValueError(f"conv2d: a kernel of shape {show_shape(ks)} does not fit the "
                             f"input {x} of shape {show_shape(r)} padded by {padding}")
        n, x, k, b = self._kernel("conv2d", x, channels, ks, weight, bias)
        extra = f", {padding}, {stride}" if stride != 1 else f", {padding}" if padding else ""
        out = tuple((m + 2 * padding - kk) // stride + 1 for m, kk in zip(r[-2:], ks[-2:]))
        return Expr(self, f"conv2d({x}, {k}{b}{extra})", (ks[0], *out), auto=("z", n))

    def _pool(self, layer: str, a, n: int, stride) -> Expr:
        a = self._shaped(layer, a)
        s, stride = a.shape, n if stride is None else stride
        for what, v in (("window", n), ("stride", stride)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{layer}: the {what} must be a positive integer, not {v!r}")
        if len(s) < 2 or s[-1] < n or s[-2] < n:
            raise ValueError(f"{layer}: a {n}×{n} window does not fit the last two "
                             f"dimensions of {a} (shape {show_shape(s)})")
        arg = f", {stride}" if stride != n else ""
        out = tuple((m - n) // stride + 1 for m in s[-2:])  # floor mode: what does not fit
        return Expr(self, f"{layer}({self._named(a)}, {n}{arg})", (*s[:-2], *out),
                    auto=("p", 1))

    def avgpool(self, a, n: int, stride: int | None = None) -> Expr:
        """``avgpool(a, n, s)``: the mean of each n×n window at stride s (default n) of the
        last two dimensions; windows that do not fit are dropped (floor mode)."""
        return self._pool("avgpool", a, n, stride)

    def maxpool(self, a, n: int, stride: int | None = None) -> Expr:
        """``maxpool(a, n, s)``: as ``avgpool``, the maximum of each window."""
        return self._pool("maxpool", a, n, stride)

    def maxall(self, a) -> Expr:
        """``maxall(a)``: the largest element, shape 1 (a stable softmax shifts by it)."""
        a = self._as_expr(a)
        return Expr(self, f"maxall({self._named(a)})", (1,), auto=("m", 1))

    def max(self, a, b) -> Expr:
        """``max(a, b)``, elementwise (``b`` may be 0)."""
        a, b = self._as_expr(a), self._as_expr(b)
        shape = _same("max", a.shape, b.shape)
        return Expr(self, f"max({a._ref()}, {b._ref()})", shape)

    def _elementwise(self, fn: str, e) -> Expr:
        e = self._as_expr(e)
        return Expr(self, f"{fn}({e._ref()})", e.shape)

    def logistic(self, e) -> Expr:
        return self._elementwise("logistic", e)

    def relu(self, e) -> Expr:
        return self._elementwise("relu", e)

    def exp(self, e) -> Expr:
        return self._elementwise("exp", e)

    def log(self, e) -> Expr:
        return self._elementwise("log", e)

    def recip(self, e) -> Expr:
        """1 / e, elementwise."""
        return self._elementwise("recip", e)

    def sqrt(self, e) -> Expr:
        """√e, elementwise (NaN below 0; its gradient 1 / (2√e) is +inf at 0)."""
        return self._elementwise("sqrt", e)

    def erf(self, e) -> Expr:
        """The error function of ``e``, elementwise (dump version 6; its derivative is ``derf``,
        ``(2/√π) exp(−e²)``). The exact GELU is ``x * (1 + b.erf(x * c)) / 2`` with ``c`` a
        ``const`` holding ``1/√2`` (given with the weights)."""
        return self._elementwise("erf", e)

    def derf(self, e) -> Expr:
        """erf's derivative ``(2/√π) exp(−e²)``, elementwise (version 6)."""
        return self._elementwise("derf", e)

    def detach(self, e) -> Expr:
        """``detach(e)``: the value of ``e``, with derivative 0 (a stop-gradient, PyTorch's
        ``e.detach()``), elementwise."""
        return self._elementwise("detach", e)

    def logsumexp(self, a) -> Expr:
        """``logsumexp(a)``: ``log Σⱼ exp(a[j])`` of any shape, shape 1, shifted by the detached
        maximum (``m + log(sum j . exp(a[j] − m))``, ``m = detach(maxall(a))``), so that its
        gradient is exactly the softmax of ``a``. A layer (a sum and a max-reduction): bound as
        ``lse1``, ``lse2``, … when first used; a non-name input is bound first."""
        a = self._as_expr(a)
        return Expr(self, f"logsumexp({self._named(a)})", (1,), auto=("lse", 1))

    def tanh(self, e) -> Expr:
        """``tanh(e)``, elementwise: a layer, ``2σ(2e) − 1``, that reads ``e`` four times (so
        ``e`` is bound first unless it is a name)."""
        e = self._as_expr(e)
        return Expr(self, f"tanh({self._named(e)})", e.shape)

    def cross_entropy(self, z, y) -> Expr:
        """``softmax_ce(z, y)``: the softmax cross-entropy of the logits ``z`` against the target
        ``y`` of their shape (one-hot, or probabilities summing to 1), stably: the log-sum-exp of
        ``z`` shifted by its detached maximum, less ``Σ y·z``, so that its gradient is exactly
        ``softmax(z) − y``. Over the last dimension: shape (1,) for a vector, one value per row
        (shape ``z.shape[:-1]``) for more dimensions. A layer: bound as ``ce1``, ``ce2``, … when
        used inside another expression; a non-name input is bound first."""
        z, y = self._shaped("cross_entropy", z), self._shaped("cross_entropy", y)
        shape = _same("cross_entropy", z.shape, y.shape)
        out = shape[:-1] if len(shape) > 1 else (1,)
        return Expr(self, f"softmax_ce({self._named(z)}, {self._named(y)})", out, auto=("ce", 1))

    def log_softmax(self, z) -> Expr:
        """``log_softmax(z)``: ``z − logsumexp`` over the last dimension (per row), of ``z``'s
        shape. A layer: bound as ``ls1``, … when used inside another expression."""
        z = self._shaped("log_softmax", z)
        return Expr(self, f"log_softmax({self._named(z)})", z.shape, auto=("ls", 1))

    def sqerr(self, r, t) -> Expr:
        """½ Σ (r − t)², shape 1."""
        r, t = self._as_expr(r), self._as_expr(t)
        _same("sqerr", r.shape, t.shape)
        return Expr(self, f"sqerr({r._ref()}, {t._ref()})", (1,))

    # the model file ---------------------------------------------------------------------
    def text(self) -> str:
        if self._loss is None:
            raise ValueError(f"model {self.name}: no loss yet (end the model with loss(...))")
        lines = [f"model {self.name}"]
        lines += [f"{kind:<6} {name} : {show_shape(s)}" for kind, name, s in self._data]
        lines += [f"{kind:<6} {name} : {show_shape(s)}" for kind, name, s in self._params]
        lines += [f"{kind + ' ' if kind else ''}{name} = {text}"
                  for kind, name, text in self._stmts]
        return "\n".join(lines) + "\n"

    def save(self, path) -> Path:
        """Write the model file (atomically); returns its path."""
        path = Path(path)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_text(self.text())
        os.replace(tmp, path)
        return path

    def compile(self) -> str:
        """The dump (JSON text) of this model, by the Agda elaborator
        (extract/front/frontend.py)."""
        from extract.front.frontend import compile_model
        return compile_model(self.text(), name_hint=f"<{self.name}.model>")

    def load(self, **kw):
        """``runtime.load(self, **kw)``: compile this model, generate and build its kernels
        (cached by content) and return the ``runtime.Model`` with fresh or given weights."""
        from .model import load
        return load(self, **kw)

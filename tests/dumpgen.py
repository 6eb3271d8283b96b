"""Build expression dumps (docs/dump-format.md, versions 2 to 5) from Python, for tests.

Terms are built with one function per node kind; each computes its node's sort and shape from
its children, so a built term is well-shaped by construction (or the builder raises). Binders
take a Python function of the bound index, and variables are turned into de Bruijn indices when
the dump is written out::

    a, b = var("a", 5), var("b", 5)
    r = sum_(5, lambda i: a[i] * b[i])           # {"op": "sum", "s": 5, "body": ...}
    dump = make_dump("dot",
                     context=[("seed", 1, "input"), ("a", 5, "param"), ("b", 5, "param")],
                     chain=[("r", r)],
                     seed=("r", var("seed", 1)),
                     gradients=[("r", var("seed", 1)), ...])

``x[i]`` is ``sels`` (i of x's shape) or ``sel`` (i of the first half of x's shape), ``+`` is
``bin plus`` (``ix_plus`` on indices), ``*`` is ``bin mul``, unary ``-`` is ``minus``.
``Builder`` wraps ``make_dump`` with handles (``b.param``, ``b.let``, ``b.grad``, ``b.d``);
``autodiff`` / ``Builder.autodiff`` derive the gradient entries by the paper's reverse-mode
rules (unoptimised).

``RandomExprs`` and ``random_dump(seed)`` make random well-shaped expressions and dumps over a
context, covering every op of §4, for differential tests of a consumer against tests/oracle.py:
with ``gradients="random"`` the gradient entries are arbitrary expressions (they exercise
evaluation order and the ``d_`` placeholders), with ``gradients="ad"`` true derivatives.

``EXAMPLES`` are the dumps saved under tests/data/ (``python tests/dumpgen.py`` rewrites them).

Shapes are written as in JSON: an ``int`` leaf or a two-element list (tuples are accepted).
"""
from __future__ import annotations

import json
import random
from typing import Any, Callable, Iterable, Sequence

GENERATOR = "tests/dumpgen.py 0.1"

# --------------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------------


def shape(x: Any) -> Any:
    """Normalise a shape to JSON form (int or two-element list)."""
    if isinstance(x, int) and not isinstance(x, bool) and x >= 0:
        return x
    if isinstance(x, (list, tuple)) and len(x) == 2:
        return [shape(x[0]), shape(x[1])]
    raise ValueError(f"not a shape: {x!r}")


def leaves(s: Any) -> tuple[int, ...]:
    return (s,) if isinstance(s, int) else leaves(s[0]) + leaves(s[1])


def size(s: Any) -> int:
    n = 1
    for x in leaves(s):
        n *= x
    return n


def same_tree(s: Any, p: Any) -> bool:
    if isinstance(s, int) or isinstance(p, int):
        return isinstance(s, int) and isinstance(p, int)
    return same_tree(s[0], p[0]) and same_tree(s[1], p[1])


def zipshape(f: Callable[[int, int], int], s: Any, p: Any) -> Any:
    if isinstance(s, int) and isinstance(p, int):
        v = f(s, p)
        if not isinstance(v, int) or v < 0:
            raise ValueError(f"no shape relation between {s!r} and {p!r}")
        return v
    if isinstance(s, int) or isinstance(p, int):
        raise ValueError(f"shapes {s!r} and {p!r} differ in tree structure")
    return [zipshape(f, s[0], p[0]), zipshape(f, s[1], p[1])]


def mapshape(f: Callable[[int], int], s: Any) -> Any:
    return zipshape(lambda a, _: f(a), s, s)


def _exact_div(a: int, b: int) -> int:
    if b == 0 or a % b:
        raise ValueError(f"{a} is not a multiple of {b}")
    return a // b


def _sub(a: int, b: int) -> int:
    if a < b:
        raise ValueError(f"{a} < {b}")
    return a - b


plus_shape = lambda s, p: zipshape(lambda a, b: a + b, s, p)  # noqa: E731  r with s + p ≈ r
suc_shape = lambda p: mapshape(lambda a: a + 1, p)  # noqa: E731          u with suc p ≈ u
times_shape = lambda s, p: zipshape(lambda a, b: a * b, s, p)  # noqa: E731 q with s * p ≈ q
minus_shape = lambda r, s: zipshape(_sub, r, s)  # noqa: E731             p with s + p ≈ r
over_shape = lambda q, p: zipshape(_exact_div, q, p)  # noqa: E731        s with s * p ≈ q
pred_shape = lambda u: mapshape(lambda a: _sub(a, 1), u)  # noqa: E731    p with suc p ≈ u


def ones_like(s: Any) -> Any:
    return mapshape(lambda _: 1, s)


# --------------------------------------------------------------------------------------------
# Terms
# --------------------------------------------------------------------------------------------

class T:
    """A term: one node with its op, sort, shape and named fields (children or constants).

    A variable is a term with op "var" and a ``key``: the top-level name (a ``str``) for an
    array variable, or the term itself for an index bound by a binder. A binder stores the
    index it binds in ``bound``."""

    __slots__ = ("op", "sort", "shape", "fields", "key", "bound")

    def __init__(self, op: str, sort: str, shp: Any, fields: dict | None = None,
                 key: Any = None, bound: "T | None" = None):
        self.op, self.sort, self.shape = op, sort, shape(shp)
        self.fields = fields or {}
        self.key, self.bound = key, bound

    def __repr__(self) -> str:
        return f"<{self.op} {self.sort} {json.dumps(self.shape)}>"

    # sugar: a + b, a * b, -a, a[i]
    def __add__(self, other: "T") -> "T":
        return ix_plus(self, other) if self.sort == "ix" else plus(self, other)

    def __mul__(self, other: "T") -> "T":
        return mul(self, other)

    def __neg__(self) -> "T":
        return minus(self)

    def __getitem__(self, i: "T") -> "T":
        return sels(self, i) if i.shape == self.shape else sel(self, i)


def _need(t: T, sort: str, what: str) -> T:
    if not isinstance(t, T):
        raise TypeError(f"{what}: expected a term, got {t!r}")
    if t.sort != sort:
        raise TypeError(f"{what}: expected sort {sort}, got {t!r}")
    return t


def _need_shape(t: T, shp: Any, what: str) -> None:
    if t.shape != shape(shp):
        raise ValueError(f"{what}: expected shape {json.dumps(shape(shp))}, got {t!r}")


def var(name: str, shp: Any) -> T:
    """A top-level array variable (context entry, chain binding or d_ placeholder) by name."""
    return T("var", "ar", shp, key=name)


def _binder(op: str, s: Any, f: Callable[[T], T], fields: dict, result: Callable[[T], Any],
            bound_shape: Any = None) -> T:
    v = T("var", "ix", s if bound_shape is None else bound_shape)
    v.key = v
    body = _need(f(v), "ar", f"{op} body")
    return T(op, "ar", result(body), {**fields, "body": body}, bound=v)


def zero(shp: Any) -> T:
    return T("zero", "ar", shp)


def one(shp: Any) -> T:
    return T("one", "ar", shp)


def imaps(s: Any, f: Callable[[T], T]) -> T:
    """``imaps s (λ i. f i)`` where ``f i`` is an array of shape 1."""
    s = shape(s)

    def result(body: T) -> Any:
        _need_shape(body, 1, "imaps body")
        return s
    return _binder("imaps", s, f, {"s": s}, result)


def sels(a: T, i: T) -> T:
    _need(a, "ar", "sels a"), _need(i, "ix", "sels i")
    _need_shape(i, a.shape, "sels i")
    return T("sels", "ar", 1, {"a": a, "i": i})


def imap(s: Any, f: Callable[[T], T]) -> T:
    s = shape(s)
    return _binder("imap", s, f, {"s": s}, lambda body: [s, body.shape])


def sel(a: T, i: T) -> T:
    _need(a, "ar", "sel a"), _need(i, "ix", "sel i")
    if isinstance(a.shape, int):
        raise ValueError(f"sel: {a!r} is not of a product shape")
    _need_shape(i, a.shape[0], "sel i")
    return T("sel", "ar", a.shape[1], {"a": a, "i": i})


def imapb(s: Any, p: Any, f: Callable[[T], T]) -> T:
    s, p = shape(s), shape(p)
    q = times_shape(s, p)

    def result(body: T) -> Any:
        _need_shape(body, p, "imapb body")
        return q
    return _binder("imapb", s, f, {"s": s, "p": p}, result)


def selb(a: T, i: T, p: Any = None) -> T:
    """``selb s p a i`` with s from i and p = a's shape / s (or given)."""
    _need(a, "ar", "selb a"), _need(i, "ix", "selb i")
    s = i.shape
    p = over_shape(a.shape, s) if p is None else shape(p)
    _need_shape(a, times_shape(s, p), "selb a")
    return T("selb", "ar", p, {"s": s, "p": p, "a": a, "i": i})


def sum_(s: Any, f: Callable[[T], T]) -> T:
    s = shape(s)
    return _binder("sum", s, f, {"s": s}, lambda body: body.shape)


def zero_but(i: T, j: T, a: T) -> T:
    _need(i, "ix", "zero_but i"), _need(j, "ix", "zero_but j"), _need(a, "ar", "zero_but a")
    _need_shape(j, i.shape, "zero_but j")
    return T("zero_but", "ar", a.shape, {"i": i, "j": j, "a": a})


def slide(i: T, a: T) -> T:
    """``slide i a``: s from i, r from a, p = r − s; result u = p + 1."""
    _need(i, "ix", "slide i"), _need(a, "ar", "slide a")
    s = i.shape
    p = minus_shape(a.shape, s)
    return T("slide", "ar", suc_shape(p), {"s": s, "p": p, "i": i, "a": a})


def backslide(i: T, a: T) -> T:
    """``backslide i a``: s from i, u from a, p = u − 1; result r = s + p."""
    _need(i, "ix", "backslide i"), _need(a, "ar", "backslide a")
    s = i.shape
    if not same_tree(s, a.shape):
        raise ValueError(f"backslide: {i!r} and {a!r} differ in tree structure")
    p = pred_shape(a.shape)
    return T("backslide", "ar", plus_shape(s, p), {"s": s, "p": p, "i": i, "a": a})


# the elementwise functions (§4), each its own op: UNARY those of versions 2 and 3 (random
# dumps drawn with them keep their terms), UNARY_V4 all of version 4 (sqrt is in version 4);
# V5 adds version 5's: the elementwise detach, and "argmax" (not elementwise: given to
# RandomExprs as a function, it lets index terms be argmax nodes); V6 version 6's erf and derf
UNARY = ("logistic", "exp", "log", "recip", "relu", "step")
UNARY_V4 = (*UNARY, "sqrt")
V5 = (*UNARY_V4, "detach", "argmax")
V6 = (*V5, "erf", "derf")


def un(fn: str, a: T) -> T:
    """The elementwise function ``fn`` (one of ``UNARY_V4``, ``detach``, ``erf``, ``derf``) of
    ``a``."""
    if fn not in (*UNARY_V4, "detach", "erf", "derf"):
        raise ValueError(f"not an elementwise function: {fn!r}")
    return T(fn, "ar", _need(a, "ar", f"{fn} a").shape, {"a": a})


def logistic(a: T) -> T:
    return un("logistic", a)


def exp(a: T) -> T:
    return un("exp", a)


def log(a: T) -> T:
    return un("log", a)


def recip(a: T) -> T:
    return un("recip", a)


def sqrt(a: T) -> T:
    return un("sqrt", a)


def relu(a: T) -> T:
    return un("relu", a)


def step(a: T) -> T:
    return un("step", a)


def detach(a: T) -> T:
    """Version 5: the value of ``a``, whose derivative is declared 0."""
    return un("detach", a)


def erf(a: T) -> T:
    """Version 6: the error function of ``a``."""
    return un("erf", a)


def derf(a: T) -> T:
    """Version 6: erf's derivative (2/√π) e^(−a²)."""
    return un("derf", a)


def argmax(s: Any, f: Callable[[T], T]) -> T:
    """Version 5: the first position of ``s`` (row-major) where the body ``f(i)`` (shape 1)
    is largest; an index term of shape ``s``."""
    s = shape(s)
    if 0 in leaves(s):
        raise ValueError(f"argmax over {json.dumps(s)}: no position")
    v = T("var", "ix", s)
    v.key = v
    body = _need(f(v), "ar", "argmax body")
    _need_shape(body, 1, "argmax body")
    return T("argmax", "ix", s, {"s": s, "body": body}, bound=v)


def maxall(s: Any, f: Callable[[T], T]) -> T:
    """``max i : s . f(i)`` as the spec writes it after opt: the body at its argmax."""
    return f(argmax(s, f))


def bin_(fn: str, a: T, b: T) -> T:
    _need(a, "ar", f"{fn} a"), _need(b, "ar", f"{fn} b")
    _need_shape(b, a.shape, f"{fn} b")
    if fn not in ("plus", "mul", "max"):
        raise ValueError(fn)
    return T("bin", "ar", a.shape, {"fn": fn, "a": a, "b": b})


def plus(a: T, b: T) -> T:
    return bin_("plus", a, b)


def mul(a: T, b: T) -> T:
    return bin_("mul", a, b)


def maximum(a: T, b: T) -> T:
    """``max(a, b)`` elementwise (a tie gives b)."""
    return bin_("max", a, b)


def scaledown(n: int, a: T) -> T:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"scaledown by {n!r}")
    return T("scaledown", "ar", _need(a, "ar", "scaledown a").shape, {"n": n, "a": a})


def minus(a: T) -> T:
    return T("minus", "ar", _need(a, "ar", "minus a").shape, {"a": a})


def ix_const(shp: Any, pos: Any) -> T:
    """The constant position ``pos`` of shape ``shp``, written like a shape (``[1, 2]``)."""
    shp, pos = shape(shp), shape(pos)
    if not same_tree(shp, pos) or any(k >= n for k, n in zip(leaves(pos), leaves(shp))):
        raise ValueError(f"ix_const: {json.dumps(pos)} is not a position of shape "
                         f"{json.dumps(shp)}")
    return T("ix_const", "ix", shp, {"pos": pos})


def div(i: T, p: Any) -> T:
    """``i div p``: i of shape q, result of shape s = q / p."""
    _need(i, "ix", "div i")
    p = shape(p)
    s = over_shape(i.shape, p)
    return T("div", "ix", s, {"s": s, "p": p, "i": i})


def mod(i: T, p: Any) -> T:
    """``i mod p``: i of shape q, result of shape p (s = q / p)."""
    _need(i, "ix", "mod i")
    p = shape(p)
    s = over_shape(i.shape, p)
    return T("mod", "ix", p, {"s": s, "p": p, "i": i})


def ix_plus(i: T, j: T) -> T:
    """``i + j``: i of shape s, j of shape u = p + 1; result of shape r = s + p."""
    _need(i, "ix", "ix_plus i"), _need(j, "ix", "ix_plus j")
    s = i.shape
    if not same_tree(s, j.shape):
        raise ValueError(f"ix_plus: {i!r} and {j!r} differ in tree structure")
    p = pred_shape(j.shape)
    return T("ix_plus", "ix", plus_shape(s, p), {"s": s, "p": p, "i": i, "j": j})


def ix_minus(i: T, j: T, f: Callable[[T], T]) -> T:
    """``ix_minus i j (λ k. f k)``: i of shape r, j of shape s, k of shape u = r − s + 1."""
    _need(i, "ix", "ix_minus i"), _need(j, "ix", "ix_minus j")
    s = j.shape
    p = minus_shape(i.shape, s)
    return _binder("ix_minus", s, f, {"s": s, "p": p, "i": i, "j": j},
                   lambda body: body.shape, bound_shape=suc_shape(p))


def ix_minus_r(i: T, j: T, f: Callable[[T], T]) -> T:
    """``ix_minus_r i j (λ k. f k)``: i of shape r, j of shape u = p + 1, k of shape s = r − p."""
    _need(i, "ix", "ix_minus_r i"), _need(j, "ix", "ix_minus_r j")
    p = pred_shape(j.shape)
    s = minus_shape(i.shape, p)
    return _binder("ix_minus_r", s, f, {"s": s, "p": p, "i": i, "j": j},
                   lambda body: body.shape)


# Field order in the emitted JSON, per op (after op, sort, shape).
_FIELD_ORDER = ("idx", "fn", "n", "pos", "s", "p", "i", "j", "a", "b", "body")


def emit(t: T, scope: Sequence[Any]) -> dict:
    """The JSON node of ``t`` in ``scope`` (keys outermost first: names, or bound index terms)."""
    if t.op == "var":
        for k in range(len(scope) - 1, -1, -1):
            if scope[k] is t.key or (isinstance(t.key, str) and scope[k] == t.key):
                node = {"op": "var", "sort": t.sort, "shape": t.shape,
                        "idx": len(scope) - 1 - k}
                return node
        raise ValueError(f"variable {t.key if isinstance(t.key, str) else t!r} is not in scope")
    node: dict[str, Any] = {"op": t.op, "sort": t.sort, "shape": t.shape}
    for f in _FIELD_ORDER:
        if f not in t.fields:
            continue
        v = t.fields[f]
        if f == "body":
            node[f] = emit(v, list(scope) + [t.bound])
        elif isinstance(v, T):
            node[f] = emit(v, scope)
        else:
            node[f] = v
    return node


def walk(t: T) -> Iterable[T]:
    """Every term under t (t included)."""
    yield t
    for v in t.fields.values():
        if isinstance(v, T):
            yield from walk(v)


# --------------------------------------------------------------------------------------------
# Dumps
# --------------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------------
# Reverse-mode differentiation of terms (the rules of the paper's §6, in Python)
# --------------------------------------------------------------------------------------------
# Used to give random dumps and the CNN stand-in gradients that are true derivatives, written
# in the same unoptimised style as the spec's. tests/test_oracle.py checks them by finite
# differences; the oracle itself never uses this code.

def _acc(delta: dict[str, T], name: str, s: T) -> None:
    delta[name] = s if name not in delta else plus(delta[name], s)


def _wrap(like: T, bound: T, body: T, op: str | None = None) -> T:
    """A binder node with the fields of ``like`` (or a ``sum`` over ``bound``) around ``body``."""
    if op == "sum":
        return T("sum", "ar", body.shape, {"s": bound.shape, "body": body}, bound=bound)
    fields = {**like.fields, "body": body}
    return T(like.op, "ar", body.shape, fields, bound=bound)


def nabla(e: T, s: T, delta: dict[str, T]) -> dict[str, T]:
    """∇ e s δ: add to δ (top-level array name -> adjoint term) the contributions of ``e``
    under seed ``s``; returns δ."""
    op, f = e.op, e.fields
    if op in ("zero", "one") or (op == "var" and e.sort == "ix"):
        return delta
    if op == "var":
        _acc(delta, e.key, s)
        return delta
    if op in ("imaps", "imap", "imapb", "sum"):
        v = e.bound
        seed = {"imaps": lambda: sels(s, v), "imap": lambda: sel(s, v),
                "imapb": lambda: selb(s, v, f["p"]), "sum": lambda: s}[op]()
        for name, t in nabla(f["body"], seed, {}).items():
            _acc(delta, name, _wrap(e, v, t, "sum"))
        return delta
    if op == "sels":
        return nabla(f["a"], imaps(f["a"].shape, lambda v: zero_but(v, f["i"], s)), delta)
    if op == "sel":
        return nabla(f["a"], imap(f["a"].shape[0], lambda v: zero_but(v, f["i"], s)), delta)
    if op == "selb":
        return nabla(f["a"], imapb(f["s"], f["p"], lambda v: zero_but(v, f["i"], s)), delta)
    if op == "zero_but":
        return nabla(f["a"], zero_but(f["i"], f["j"], s), delta)
    if op == "bin" and f["fn"] == "plus":
        return nabla(f["b"], s, nabla(f["a"], s, delta))
    if op == "bin":
        return nabla(f["b"], mul(s, f["a"]), nabla(f["a"], mul(s, f["b"]), delta))
    if op == "slide":
        return nabla(f["a"], backslide(f["i"], s), delta)
    if op == "backslide":
        return nabla(f["a"], slide(f["i"], s), delta)
    if op == "scaledown":
        return nabla(f["a"], scaledown(f["n"], s), delta)
    if op == "minus":
        return nabla(f["a"], minus(s), delta)
    if op == "logistic":
        y = logistic(f["a"])
        return nabla(f["a"], mul(mul(s, y), plus(one(y.shape), minus(y))), delta)
    if op == "exp":
        return nabla(f["a"], mul(s, exp(f["a"])), delta)
    if op == "log":
        return nabla(f["a"], mul(s, recip(f["a"])), delta)
    if op == "recip":
        return nabla(f["a"], mul(s, minus(mul(recip(f["a"]), recip(f["a"])))), delta)
    if op == "sqrt":  # sqrt′ = recip(sqrt a + sqrt a): E has no constant 2
        return nabla(f["a"], mul(s, recip(plus(sqrt(f["a"]), sqrt(f["a"])))), delta)
    if op == "relu":
        return nabla(f["a"], mul(s, step(f["a"])), delta)
    if op == "erf":   # erf′ = derf (E has no constant 2/√π)
        return nabla(f["a"], mul(s, derf(f["a"])), delta)
    if op == "derf":  # derf′ a = −((a + a) · derf a)
        return nabla(f["a"], mul(s, minus(mul(plus(f["a"], f["a"]), derf(f["a"])))), delta)
    if op in ("step", "detach"):  # their derivative is 0
        return delta
    if op in ("ix_minus", "ix_minus_r"):  # the body's adjoint, under the same condition
        for name, t in nabla(f["body"], s, {}).items():
            _acc(delta, name, _wrap(e, e.bound, t))
        return delta
    raise ValueError(f"cannot differentiate {e!r}")


def autodiff(context: Sequence[tuple[str, Any, str]], chain: Sequence[tuple[str, T]],
             seed: tuple[str, T]) -> list[tuple[str, T]]:
    """The gradient entries of §2 for a chain (the paper's Chain): seed the `of` binding, then
    walk the chain backwards, each binding's adjoint becoming its d_ placeholder."""
    of, s = seed
    shapes = {n: t.shape for n, t in chain}
    delta: dict[str, T] = {of: s}
    grads: list[tuple[str, T]] = []
    for name, t in reversed(chain):
        grads.append((name, delta.pop(name, None) or zero(shapes[name])))
        nabla(t, var("d_" + name, shapes[name]), delta)
    for name, shp, role in context:
        if role == "param":
            grads.append((name, delta.get(name) or zero(shp)))
    return grads


def make_dump(model: str, context: Sequence[tuple[str, Any, str]],
              chain: Sequence[tuple[str, T]], seed: tuple[str, T],
              gradients: Sequence[tuple], outputs: dict[str, str] | None = None,
              generator: str = GENERATOR) -> dict:
    """Write a dump. ``context``: (name, shape, role); ``chain``: (name, term); ``seed``:
    (binding name, term); ``gradients``: (wrt, term) or (wrt, name, term), in the order of §2
    (chain bindings last first, then params in context order); a chain entry's name defaults
    to ``d_<wrt>``, a param's to ``d_<wrt>`` too. Terms refer to top-level arrays with
    ``var(name, shape)``; a gradient may read ``var("d_<b>", ...)`` once the entry for b is
    written."""
    ctx = [{"name": n, "shape": shape(s), "role": r} for n, s, r in context]
    out_chain = []

    def scope(readable: set[str]) -> list[Any]:
        # A d_ placeholder nobody may read yet gets a key no var(...) can match.
        keys: list[Any] = [c["name"] for c in ctx]
        for b in out_chain:
            d = "d_" + b["name"]
            keys += [d if d in readable else ("unreadable", d), b["name"]]
        return keys

    for name, t in chain:
        _need(t, "ar", f"chain binding {name}")
        out_chain.append({"name": name, "shape": t.shape, "expr": emit(t, scope(set()))})
    of, st = seed
    out_seed = {"of": of, "expr": emit(_need(st, "ar", "seed"), scope(set()))}
    out_grads = []
    done: set[str] = set()
    for entry in gradients:
        wrt, t = entry[0], entry[-1]
        name = entry[1] if len(entry) == 3 else "d_" + wrt
        out_grads.append({"name": name, "wrt": wrt, "shape": _need(t, "ar", name).shape,
                          "expr": emit(t, scope(done))})
        done.add("d_" + wrt)
    # erf and derf are in version 6, argmax and detach in 5, sqrt in 4, const in 3
    used = ops_used([out_chain, out_seed, out_grads])
    version = 6 if used & {"erf", "derf"} else 5 if used & {"argmax", "detach"} else \
        4 if "sqrt" in used else 3 if any(c["role"] == "const" for c in ctx) else 2
    dump = {"format": "ad-expression-dump", "version": version, "model": model,
            "generator": generator, "context": ctx, "chain": out_chain, "seed": out_seed,
            "gradients": out_grads}
    if outputs:
        dump["outputs"] = dict(outputs)
    return dump


class Builder:
    """Handles over ``make_dump``: declare the context, let-bind the chain, then the seed and
    the gradients in order.

    >>> b = Builder("chain")
    >>> a, c = b.param("a", 5), b.param("b", 5)
    >>> x = b.let("x", a * c)
    """

    def __init__(self, model: str):
        self.model = model
        self.context: list[tuple[str, Any, str]] = []
        self.chain: list[tuple[str, T]] = []
        self.seed_: tuple[str, T] | None = None
        self.gradients: list[tuple] = []
        self.outputs: dict[str, str] = {}
        self.shapes: dict[str, Any] = {}

    def _declare(self, name: str, shp: Any) -> T:
        if name in self.shapes:
            raise ValueError(f"name {name!r} already used")
        self.shapes[name] = shape(shp)
        return var(name, shp)

    def input(self, name: str, shp: Any) -> T:
        self.context.append((name, shape(shp), "input"))
        return self._declare(name, shp)

    def param(self, name: str, shp: Any) -> T:
        self.context.append((name, shape(shp), "param"))
        return self._declare(name, shp)

    def const(self, name: str, shp: Any) -> T:
        """A fixed array: read like a parameter, no gradient entry."""
        self.context.append((name, shape(shp), "const"))
        return self._declare(name, shp)

    def let(self, name: str, t: T) -> T:
        self.chain.append((name, t))
        return self._declare(name, t.shape)

    def d(self, binding: T | str) -> T:
        """The derivative placeholder ``d_<binding>`` (readable once its gradient is given)."""
        name = binding if isinstance(binding, str) else binding.key
        return var("d_" + name, self.shapes[name])

    def seed(self, of: T | str, t: T) -> None:
        self.seed_ = (of if isinstance(of, str) else of.key, t)

    def grad(self, wrt: T | str, t: T) -> T:
        name = wrt if isinstance(wrt, str) else wrt.key
        self.gradients.append((name, t))
        return self.d(name)

    def autodiff(self) -> None:
        """Derive every gradient entry from the chain and the seed (``autodiff``)."""
        if self.seed_ is None:
            raise ValueError("no seed")
        self.gradients = list(autodiff(self.context, self.chain, self.seed_))

    def output(self, key: str, binding: T | str) -> None:
        self.outputs[key] = binding if isinstance(binding, str) else binding.key

    def build(self) -> dict:
        if self.seed_ is None:
            raise ValueError("no seed")
        return make_dump(self.model, self.context, self.chain, self.seed_, self.gradients,
                         self.outputs or None)


def save(dump: dict, path: str) -> None:
    """Write a dump as indented JSON (shapes on one line are not worth a custom printer)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dump, f, indent=1)
        f.write("\n")


# --------------------------------------------------------------------------------------------
# Random well-shaped expressions
# --------------------------------------------------------------------------------------------

ALL_OPS = ("var", "zero", "one", "imaps", "sels", "imap", "sel", "imapb", "selb", "sum",
           "zero_but", "slide", "backslide", *UNARY_V4, "bin", "scaledown", "minus", "ix_const",
           "div", "mod", "ix_plus", "ix_minus", "ix_minus_r", "detach", "argmax", "erf",
           "derf")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


class RandomExprs:
    """Random well-shaped terms over some top-level arrays (``var`` terms).

    Every choice comes from ``rng`` (a ``random.Random``), so a seed fixes the result. Shapes
    stay small (leaves of at most ``max_leaf``, at most three leaves) and nesting is bounded by
    ``depth``, so a term evaluates quickly even one position at a time.

    ``fns``: the elementwise functions to use (``logistic`` is always among them). The
    default, ``logistic`` only, makes the same terms as before the others existed (the choices
    are drawn in the same order), and so does ``UNARY`` without ``sqrt``; the others are
    applied where they are defined and well conditioned: ``exp`` of a logistic (in (1, e)),
    ``log``, ``recip`` and ``sqrt`` of ``1 + t·t`` (at least 1), ``relu`` and ``step`` of any
    term; with all of ``UNARY``, also ``bin max`` of any two terms. With ``V5``: ``detach`` of
    any term, and (``"argmax"``) index terms that are the argmax of a random body; with
    ``V6``, ``erf`` and ``derf`` of any term."""

    def __init__(self, rng: random.Random, arrays: Sequence[T], max_leaf: int = 3,
                 fns: Sequence[str] = ("logistic",)):
        self.rng = rng
        self.arrays = list(arrays)
        self.max_leaf = max_leaf
        self.fns = tuple(fns)
        if not set(self.fns) <= set(V6):
            raise ValueError(f"not elementwise functions: "
                             f"{sorted(set(self.fns) - set(V6))}")

    # shapes -----------------------------------------------------------------------------
    def random_shape(self, like: Any = None) -> Any:
        """A random shape (of ``like``'s tree structure if given)."""
        r = self.rng
        if like is not None:
            return mapshape(lambda _: r.randint(1, self.max_leaf), like)
        k = r.random()
        leaf = lambda: r.randint(1, self.max_leaf)  # noqa: E731
        if k < 0.45:
            return leaf()
        if k < 0.85:
            return [leaf(), leaf()]
        return [leaf(), [leaf(), leaf()]] if r.random() < 0.5 else [[leaf(), leaf()], leaf()]

    def binder_shape(self) -> Any:
        """A shape to bind an index over: often one of the arrays' shapes or a part of one."""
        if self.arrays and self.rng.random() < 0.6:
            s = self.rng.choice(self.arrays).shape
            while not isinstance(s, int) and self.rng.random() < 0.3:
                s = self.rng.choice(s)
            if size(s) <= 27:
                return s
        return self.random_shape()

    # indices ----------------------------------------------------------------------------
    def const_of(self, shp: Any) -> T | None:
        """A random constant position of shape ``shp`` (None if it has no position)."""
        if 0 in leaves(shp):
            return None
        return ix_const(shp, mapshape(lambda n: self.rng.randrange(n), shp))

    def any_ix(self, ixs: list[T], depth: int, like: Any = None) -> T | None:
        """A random index term (of ``like``'s tree structure if given), or None. Sometimes a
        constant, also where no index is in scope."""
        cands = [v for v in ixs if like is None or same_tree(v.shape, like)]
        if self.rng.random() < (0.2 if not cands else 0.1):
            return self.const_of(self.random_shape(like))
        if not cands:
            return None
        v = self.rng.choice(cands)
        if depth <= 0 or self.rng.random() < 0.5:
            return v
        k = self.rng.randrange(3)
        if k == 0:
            return div(v, mapshape(lambda n: self.rng.choice(_divisors(n)) if n else 1, v.shape)) \
                if 0 not in leaves(v.shape) else v
        if k == 1:
            return mod(v, mapshape(lambda n: self.rng.choice(_divisors(n)) if n else 1, v.shape)) \
                if 0 not in leaves(v.shape) else v
        w = self.any_ix(ixs, depth - 1, v.shape)
        return ix_plus(v, w) if w is not None and 0 not in leaves(w.shape) else v

    def ix_of(self, shp: Any, ixs: list[T], depth: int) -> T | None:
        """A random index term of exactly shape ``shp``, or None if none is found."""
        r = self.rng
        if r.random() < 0.1:
            return self.const_of(shp)
        exact = [v for v in ixs if v.shape == shp]
        tree = [v for v in ixs if same_tree(v.shape, shp)]
        ways = []
        if exact:
            ways.append(lambda: r.choice(exact))
        for v in tree:
            if all(q % p == 0 for q, p in zip(leaves(v.shape), leaves(shp))) and min(
                    leaves(shp)) > 0:
                ways.append(lambda v=v: mod(v, shp))
                ways.append(lambda v=v: div(v, over_shape(v.shape, shp)))
        if depth > 0:
            for v in tree:
                if all(a <= b for a, b in zip(leaves(v.shape), leaves(shp))):
                    def plus_way(v: T = v) -> T | None:
                        j = self.ix_of(zipshape(lambda a, b: a - b + 1, shp, v.shape), ixs,
                                       depth - 1)
                        return None if j is None else ix_plus(v, j)
                    ways.append(plus_way)
        if "argmax" in self.fns and depth > 0 and 0 not in leaves(shp) and size(shp) <= 27:
            ways.append(lambda: argmax(shp, lambda i: self.ar(1, depth - 1, ixs + [i])))
        r.shuffle(ways)
        if exact and r.random() < 0.5:
            return r.choice(exact)
        for w in ways:
            t = w()
            if t is not None:
                return t
        return None

    # arrays -----------------------------------------------------------------------------
    def ar(self, shp: Any, depth: int, ixs: list[T] | None = None) -> T:
        """A random array term of shape ``shp`` in the scope of the index terms ``ixs``."""
        shp = shape(shp)
        ixs = list(ixs or [])
        r = self.rng
        matching = [a for a in self.arrays if a.shape == shp]
        if depth <= 0:
            ways = [(4, lambda: r.choice(matching) if matching else None),
                    (3, lambda: self._sels_of_array(shp, ixs, 0)),
                    (0.2, lambda: zero(shp)), (1, lambda: one(shp))]
        else:
            d = depth - 1
            ways = [
                (3, lambda: r.choice(matching) if matching else None),
                (0.1, lambda: zero(shp)), (0.5, lambda: one(shp)),
                (1, lambda: imaps(shp, lambda i: self.ar(1, d, ixs + [i]))),
                (3, lambda: self._sels_of_array(shp, ixs, d)),
                (1, lambda: self._sels(shp, ixs, d)),
                (1, lambda: imap(shp[0], lambda i: self.ar(shp[1], d, ixs + [i]))
                 if not isinstance(shp, int) else None),
                (1, lambda: self._sel(shp, ixs, d)),
                (1, lambda: self._imapb(shp, ixs, d)),
                (1, lambda: self._selb(shp, ixs, d)),
                (2, lambda: sum_(self.binder_shape(), lambda i: self.ar(shp, d, ixs + [i]))),
                (1, lambda: self._zero_but(shp, ixs, d)),
                (1, lambda: self._slide(shp, ixs, d)),
                (1, lambda: self._backslide(shp, ixs, d)),
                (1, lambda: logistic(self.ar(shp, d, ixs))),
                (2, lambda: plus(self.ar(shp, d, ixs), self.ar(shp, d, ixs))),
                (2, lambda: mul(self.ar(shp, d, ixs), self.ar(shp, d, ixs))),
                (0.7, lambda: scaledown(r.randint(1, 4), self.ar(shp, d, ixs))),
                (0.7, lambda: minus(self.ar(shp, d, ixs))),
                (1, lambda: self._ix_minus(shp, ixs, d)),
                (1, lambda: self._ix_minus_r(shp, ixs, d)),
            ]
            # the other elementwise functions, only when asked for (so that the default
            # draws, and the terms, are the same as before they existed)
            positive = lambda: plus(one(shp), self._square(shp, d, ixs))  # noqa: E731
            more = {"exp": lambda: exp(logistic(self.ar(shp, d, ixs))),
                    "log": lambda: log(positive()),
                    "recip": lambda: recip(positive()),
                    "relu": lambda: relu(self.ar(shp, d, ixs)),
                    "step": lambda: step(self.ar(shp, d, ixs)),
                    "sqrt": lambda: sqrt(positive()),
                    "detach": lambda: detach(self.ar(shp, d, ixs)),
                    "erf": lambda: erf(self.ar(shp, d, ixs)),
                    "derf": lambda: derf(self.ar(shp, d, ixs))}
            ways += [(0.5, more[f]) for f in (*UNARY_V4, "detach", "erf", "derf")
                     if f in self.fns and f != "logistic"]
            if set(UNARY) <= set(self.fns):
                ways.append((0.5, lambda: maximum(self.ar(shp, d, ixs), self.ar(shp, d, ixs))))
        ways = list(ways)
        while ways:
            k = r.choices(range(len(ways)), [w for w, _ in ways])[0]
            t = ways.pop(k)[1]()
            if t is not None:
                assert t.shape == shp, (t, shp)
                return t
        return one(shp)

    def _square(self, shp: Any, d: int, ixs: list[T]) -> T:
        t = self.ar(shp, d, ixs)
        return mul(t, t)

    def _sels_of_array(self, shp: Any, ixs: list[T], d: int) -> T | None:
        """An element (sels) or a part (sel) of a top-level array, at a random index."""
        r = self.rng
        cands = [a for a in self.arrays if shp == 1 or (
            not isinstance(a.shape, int) and a.shape[1] == shp)]
        r.shuffle(cands)
        for a in cands:
            if shp == 1 and (isinstance(a.shape, int) or r.random() < 0.5):
                i = self.ix_of(a.shape, ixs, min(d, 2))
                if i is not None:
                    return sels(a, i)
            if not isinstance(a.shape, int) and a.shape[1] == shp:
                i = self.ix_of(a.shape[0], ixs, min(d, 2))
                if i is not None:
                    return sel(a, i)
        return None

    def _sels(self, shp: Any, ixs: list[T], d: int) -> T | None:
        if shp != 1:
            return None
        i = self.any_ix(ixs, d)
        return None if i is None else sels(self.ar(i.shape, d, ixs), i)

    def _sel(self, shp: Any, ixs: list[T], d: int) -> T | None:
        i = self.any_ix(ixs, d)
        if i is None or size(i.shape) * size(shp) > 64:
            return None
        return sel(self.ar([i.shape, shp], d, ixs), i)

    def _imapb(self, shp: Any, ixs: list[T], d: int) -> T | None:
        if 0 in leaves(shp):
            return None
        s = mapshape(lambda n: self.rng.choice(_divisors(n)), shp)
        return imapb(s, over_shape(shp, s), lambda i: self.ar(over_shape(shp, s), d, ixs + [i]))

    def _selb(self, shp: Any, ixs: list[T], d: int) -> T | None:
        i = self.any_ix(ixs, d, like=shp)
        if i is None or size(times_shape(i.shape, shp)) > 64:
            return None
        return selb(self.ar(times_shape(i.shape, shp), d, ixs), i, shp)

    def _zero_but(self, shp: Any, ixs: list[T], d: int) -> T | None:
        i = self.any_ix(ixs, d)
        j = None if i is None else self.ix_of(i.shape, ixs, min(d, 2))
        return None if j is None else zero_but(i, j, self.ar(shp, d, ixs))

    def _slide(self, shp: Any, ixs: list[T], d: int) -> T | None:
        i = self.any_ix(ixs, d, like=shp)
        if i is None or 0 in leaves(shp):
            return None
        return slide(i, self.ar(plus_shape(i.shape, pred_shape(shp)), d, ixs))

    def _backslide(self, shp: Any, ixs: list[T], d: int) -> T | None:
        if 0 in leaves(shp):
            return None
        i = self.any_ix(ixs, d, like=shp)
        if i is None or any(a > b for a, b in zip(leaves(i.shape), leaves(shp))):
            i = self.ix_of(mapshape(lambda n: self.rng.randint(1, n), shp), ixs, min(d, 2))
        if i is None:
            return None
        return backslide(i, self.ar(suc_shape(minus_shape(shp, i.shape)), d, ixs))

    def _ix_minus(self, shp: Any, ixs: list[T], d: int) -> T | None:
        i = self.any_ix(ixs, d)
        if i is None:
            return None
        j = self.any_ix(ixs, d, like=i.shape)
        if j is None or any(a > b for a, b in zip(leaves(j.shape), leaves(i.shape))):
            return None
        return ix_minus(i, j, lambda k: self.ar(shp, d, ixs + [k]))

    def _ix_minus_r(self, shp: Any, ixs: list[T], d: int) -> T | None:
        i = self.any_ix(ixs, d)
        if i is None:
            return None
        j = self.any_ix(ixs, d, like=i.shape)
        if j is None or any(a > b for a, b in zip(leaves(j.shape), leaves(i.shape))) \
                or 0 in leaves(j.shape):
            return None
        return ix_minus_r(i, j, lambda k: self.ar(shp, d, ixs + [k]))


def random_dump(seed: int, depth: int = 3, n_context: int = 3, n_chain: int = 2,
                model: str = "random", gradients: str = "random",
                fns: Sequence[str] = ("logistic",)) -> dict:
    """A random well-shaped dump: random context, chain and seed expressions, with the
    elementwise functions ``fns`` (``UNARY_V4`` for all of them; see ``RandomExprs``).

    ``gradients="random"``: the gradient entries are arbitrary expressions of the right shapes
    (reading the context, the bindings and the ``d_`` placeholders already computed), not
    derivatives. ``gradients="ad"``: they are the derivatives (``autodiff``), so a consumer's
    gradients can also be checked by finite differences."""
    rng = random.Random(seed)
    gen = RandomExprs(rng, [], fns=fns)
    context = []
    for n in range(n_context):
        role = "input" if n == 0 and n_context > 1 else "param"
        context.append((f"x{n}", gen.random_shape(), role))
    arrays = [var(n, s) for n, s, _ in context]
    chain = []
    for k in range(n_chain):
        gen.arrays = list(arrays)
        t = gen.ar(gen.random_shape() if k < n_chain - 1 else 1, depth)
        chain.append((f"v{k}", t))
        arrays.append(var(f"v{k}", t.shape))
    last, last_t = chain[-1]
    # With true derivatives the seed must not depend on the params (the reverse pass treats
    # it as a constant), so it reads the inputs only.
    gen.arrays = [a for a, (_, _, role) in zip(arrays, context) if role == "input"] \
        if gradients == "ad" else list(arrays)
    seed_t = gen.ar(last_t.shape, depth)
    gen.arrays = list(arrays)
    if gradients == "ad":
        grads = autodiff(context, chain, (last, seed_t))
    elif gradients == "random":
        grads = []
        for name, t in reversed(chain):
            grads.append((name, gen.ar(t.shape, depth)))
            gen.arrays.append(var("d_" + name, t.shape))
        for name, s, role in context:
            if role == "param":
                grads.append((name, gen.ar(s, depth)))
    else:
        raise ValueError(f"gradients={gradients!r}")
    more = "" if tuple(fns) == ("logistic",) else f", fns={','.join(fns)}"
    return make_dump(model, context, chain, (last, seed_t), grads,
                     {"prediction": chain[0][0], "loss": last},
                     generator=f"{GENERATOR} random_dump(seed={seed}, gradients={gradients}"
                               f"{more})")


def random_context_values(dump: dict, seed: int = 0) -> dict[str, Any]:
    """Random values (uniform in [-1, 1], float64) for a dump's context."""
    import numpy as np
    rng = np.random.default_rng(seed)
    return {c["name"]: rng.uniform(-1, 1, leaves(shape(c["shape"]))) for c in dump["context"]}


def ops_used(node: Any) -> set[str]:
    """The ops occurring in a JSON node (or a whole dump)."""
    found: set[str] = set()

    def go(x: Any) -> None:
        if isinstance(x, dict):
            if "op" in x and "sort" in x:
                found.add(x["op"])
            for v in x.values():
                go(v)
        elif isinstance(x, list):
            for v in x:
                go(v)
    go(node)
    return found


# --------------------------------------------------------------------------------------------
# Hand-built example dumps (saved under tests/data/ by `python tests/dumpgen.py`)
# --------------------------------------------------------------------------------------------
# Their gradients are derived by hand in the language; tests/test_oracle.py checks them by
# finite differences. Where an op has two equivalent adjoint forms (backslide / ix_minus /
# ix_minus_r), a gradient averages them so that every form is exercised.

def _one_minus(t: T) -> T:
    return plus(one(t.shape), minus(t))


def dot_hand() -> dict:
    """§6 `dot`: r = Σᵢ a[i]·b[i], seeded by the input `seed`."""
    m = Builder("dot")
    seed = m.input("seed", 1)
    a, b = m.param("a", 5), m.param("b", 5)
    r = m.let("r", sum_(5, lambda i: a[i] * b[i]))
    m.seed(r, seed)
    d_r = m.grad(r, seed)
    m.grad(a, imaps(5, lambda i: d_r * b[i]))
    m.grad(b, imaps(5, lambda i: d_r * a[i]))
    m.output("prediction", r)
    return m.build()


def chain_hand() -> dict:
    """§6 `chain`: x = a·b, y = x·x (elementwise), seeded by `one`."""
    m = Builder("chain")
    a, b = m.param("a", 5), m.param("b", 5)
    x = m.let("x", a * b)
    y = m.let("y", x * x)
    m.seed(y, one(5))
    d_y = m.grad(y, one(5))
    d_x = m.grad(x, d_y * x + d_y * x)
    m.grad(a, d_x * b)
    m.grad(b, d_x * a)
    return m.build()


def ops_map_hand() -> dict:
    """imaps, sels, imap, sel, sum, logistic, bin, scaledown, minus, one, zero."""
    m = Builder("ops_map")
    x, w = m.param("x", [2, 3]), m.param("w", 3)
    h = m.let("h", imap(2, lambda i: imaps(3, lambda j: logistic(x[i][j] * w[j]))))
    # l = Σ_k −h[k]/2 + 0
    loss = m.let("loss", sum_([2, 3], lambda k: scaledown(2, minus(h[k]))) + zero(1))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_h = m.grad(h, imaps([2, 3], lambda k: scaledown(2, minus(d_loss))))

    def dpre(i: T, j: T) -> T:  # ∂loss/∂(x[i][j]·w[j]) = d_h · h · (1 − h)
        return d_h[i][j] * h[i][j] * _one_minus(h[i][j])
    m.grad(x, imap(2, lambda i: imaps(3, lambda j: dpre(i, j) * w[j])))
    m.grad(w, imaps(3, lambda j: sum_(2, lambda i: dpre(i, j) * x[i][j])))
    m.output("loss", loss)
    return m.build()


def ops_block_hand() -> dict:
    """imapb, selb, div, mod, zero_but: 2×2 average pooling and block-periodic weights."""
    m = Builder("ops_block")
    x, g = m.param("x", [4, 6]), m.param("g", [2, 2])
    blk = [2, 2]
    # s = average of each 2×2 block of x;  z[j] = x[j] · s[j div 2] · g[j mod 2]
    s = m.let("s", imaps([2, 3], lambda i: scaledown(4, sum_(blk, lambda k: selb(x, i, blk)[k]))))
    z = m.let("z", imaps([4, 6], lambda j: x[j] * s[div(j, blk)] * g[mod(j, blk)]))
    loss = m.let("loss", sum_([4, 6], lambda j: z[j] * z[j]))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_z = m.grad(z, imaps([4, 6], lambda j: d_loss * z[j] + d_loss * z[j]))
    d_s = m.grad(s, imaps([2, 3], lambda i: sum_([4, 6], lambda j: zero_but(
        div(j, blk), i, d_z[j] * x[j] * g[mod(j, blk)]))))
    m.grad(x, imaps([4, 6], lambda j: d_z[j] * s[div(j, blk)] * g[mod(j, blk)])
           + imapb([2, 3], blk, lambda i: imaps(blk, lambda _: scaledown(4, d_s[i]))))
    m.grad(g, imaps(blk, lambda k: sum_([4, 6], lambda j: zero_but(
        mod(j, blk), k, d_z[j] * x[j] * s[div(j, blk)]))))
    m.output("loss", loss)
    return m.build()


def ops_slide_hand() -> dict:
    """slide, backslide, ix_plus, ix_minus, ix_minus_r: one convolution written two ways."""
    m = Builder("ops_slide")
    x, k = m.param("x", [5, 4]), m.param("k", [2, 2])
    u = [4, 3]  # output shape: r = [5, 4], s = [2, 2], p = [3, 2], u = p + 1
    c = m.let("c", sum_([2, 2], lambda i: slide(i, x) * imaps(u, lambda _: k[i])))
    c2 = m.let("c2", imaps(u, lambda j: sum_([2, 2], lambda i: x[i + j] * k[i])))
    loss = m.let("loss", sum_(u, lambda j: c[j] * c2[j]))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_c2 = m.grad(c2, imaps(u, lambda j: d_loss * c[j]))
    d_c = m.grad(c, imaps(u, lambda j: d_loss * c2[j]))
    via_c = sum_([2, 2], lambda i: backslide(i, imaps(u, lambda j: d_c[j] * k[i])))
    via_c2_minus = imaps([5, 4], lambda q: sum_(u, lambda j: ix_minus(
        q, j, lambda i: d_c2[j] * k[i])))
    via_c2_minus_r = imaps([5, 4], lambda q: sum_([2, 2], lambda i: ix_minus_r(
        q, i, lambda j: d_c2[j] * k[i])))
    m.grad(x, via_c + scaledown(2, via_c2_minus) + scaledown(2, via_c2_minus_r))
    m.grad(k, imaps([2, 2], lambda i: sum_(u, lambda j: d_c[j] * slide(i, x)[j]
                                              + d_c2[j] * x[i + j])))
    m.output("loss", loss)
    return m.build()


def pad_const_hand() -> dict:
    """ix_const: zero padding by backslide at a constant, read back by slide, sels, zero_but
    and ix_plus at constants; a "same" convolution over the padded matrix."""
    m = Builder("pad_const")
    y = m.input("y", 6)
    x, k, v = m.param("x", [3, 4]), m.param("k", [3, 3]), m.param("v", 3)
    at11 = ix_const([3, 3], [1, 1])   # x padded by one zero on every side: [5, 6]
    at2 = ix_const(4, 2)              # v placed at offset 2 in a 6-vector
    cc, cv = ix_const([3, 4], [1, 2]), ix_const(3, 0)
    p = m.let("p", backslide(at11, x))
    c = m.let("c", imaps([3, 4], lambda j: sum_([3, 3], lambda i: p[j + i] * k[i])))
    q = m.let("q", backslide(at2, v))
    # loss = Σ_j c[j]² + Σ_t q[t]·y[t] + c[1, 2]·v[0]
    loss = m.let("loss", sum_([3, 4], lambda j: c[j] * c[j]) + sum_(6, lambda t: q[t] * y[t])
                 + c[cc] * v[cv])
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_q = m.grad(q, imaps(6, lambda t: d_loss * y[t]))
    d_c = m.grad(c, imaps([3, 4], lambda j: d_loss * c[j] + d_loss * c[j]
                          + zero_but(j, cc, d_loss * v[cv])))
    d_p = m.grad(p, sum_([3, 3], lambda i: backslide(i, imaps([3, 4], lambda j: d_c[j] * k[i]))))
    # the adjoint of the padding, two ways: slide at the constant, and ix_plus of it
    m.grad(x, scaledown(2, slide(at11, d_p)) + scaledown(2, imaps([3, 4], lambda j:
                                                                   d_p[at11 + j])))
    m.grad(k, imaps([3, 3], lambda i: sum_([3, 4], lambda j: d_c[j] * p[j + i])))
    m.grad(v, slide(at2, d_q) + imaps(3, lambda t: zero_but(t, cv, d_loss * c[cc])))
    m.output("loss", loss)
    return m.build()


def unary_hand() -> dict:
    """The elementwise functions logistic, exp, log, recip, relu, step, on a = x·w (a [2, 3]
    matrix of products), whole-array and under maps; log and recip of 1 + a² (positive), exp
    of a/2, step in the forward chain (its derivative is 0, so a gets nothing through it)."""
    m = Builder("unary")
    x, w = m.param("x", [2, 3]), m.param("w", 3)
    S = [2, 3]
    a = m.let("a", imap(2, lambda i: imaps(3, lambda j: x[i][j] * w[j])))
    pos = plus(one(S), a * a)                                   # 1 + a², at least 1
    r = m.let("r", relu(a))
    sg = m.let("sg", logistic(a))
    e = m.let("e", exp(scaledown(2, a)))
    lg = m.let("lg", imap(2, lambda i: imaps(3, lambda j: log(one(1) + a[i][j] * a[i][j]))))
    rc = m.let("rc", recip(pos))
    st = m.let("st", step(a) * x)
    # loss = Σ_k r + sg + e + lg · rc + st
    loss = m.let("loss", sum_(S, lambda k: r[k] + sg[k] + e[k] + lg[k] * rc[k] + st[k]))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_st = m.grad(st, imaps(S, lambda k: d_loss))
    d_rc = m.grad(rc, imaps(S, lambda k: d_loss * lg[k]))
    d_lg = m.grad(lg, imaps(S, lambda k: d_loss * rc[k]))
    d_e = m.grad(e, imaps(S, lambda k: d_loss))
    d_sg = m.grad(sg, imaps(S, lambda k: d_loss))
    d_r = m.grad(r, imaps(S, lambda k: d_loss))
    # relu′ = step, logistic′ = σ(1 − σ), (exp (a/2))′ = e/2, log′ (1 + a²) = 2a / (1 + a²),
    # recip′ (1 + a²) = −2a / (1 + a²)², step′ = 0
    two_a = a + a
    d_a = m.grad(a, d_r * step(a) + d_sg * sg * _one_minus(sg) + scaledown(2, d_e * e)
                 + d_lg * recip(pos) * two_a
                 + d_rc * minus(recip(pos) * recip(pos)) * two_a)
    m.grad(x, imap(2, lambda i: imaps(3, lambda j: d_a[i][j] * w[j]
                                             + d_st[i][j] * step(a)[i][j])))
    m.grad(w, imaps(3, lambda j: sum_(2, lambda i: d_a[i][j] * x[i][j])))
    m.output("loss", loss)
    return m.build()


def sqrt_hand() -> dict:
    """``sqrt`` (version 4) of a positive argument: whole-array of u = 1 + a² (a = w·x, a
    [2, 3] matrix of products with the input), and under a map of 1 + v[i]², a parameter's
    alone; the gradients as the spec writes sqrt′, the seed times recip(sqrt u + sqrt u)."""
    m = Builder("sqrt_hand")
    x = m.input("x", 3)
    w, v = m.param("w", [2, 3]), m.param("v", 2)
    S = [2, 3]
    a = m.let("a", imap(2, lambda i: imaps(3, lambda j: w[i][j] * x[j])))
    u = plus(one(S), a * a)                                     # 1 + a², at least 1
    r = m.let("r", sqrt(u))
    q = m.let("q", imaps(2, lambda i: sqrt(one(1) + v[i] * v[i])))
    # loss = Σ_i Σ_j r[i][j] · q[i]
    loss = m.let("loss", sum_(2, lambda i: sum_(3, lambda j: r[i][j] * q[i])))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_q = m.grad(q, imaps(2, lambda i: d_loss * sum_(3, lambda j: r[i][j])))
    d_r = m.grad(r, imap(2, lambda i: imaps(3, lambda j: d_loss * q[i])))
    # sqrt′ u = 1 / (sqrt u + sqrt u), u′ = a + a
    d_a = m.grad(a, d_r * recip(sqrt(u) + sqrt(u)) * (a + a))
    m.grad(w, imap(2, lambda i: imaps(3, lambda j: d_a[i][j] * x[j])))
    m.grad(v, imaps(2, lambda i: d_q[i] * recip(sqrt(one(1) + v[i] * v[i])
                                                + sqrt(one(1) + v[i] * v[i])) * (v[i] + v[i])))
    m.output("loss", loss)
    return m.build()


def erf_hand() -> dict:
    """``erf`` and ``derf`` (version 6): the exact GELU of a = w·x, g = a · (1 + erf(a · c)) / 2
    (c a const, 1/√2 in a model), and derf of a parameter; the gradients as the spec writes erf′
    = derf and derf′ a = −((a + a) · derf a)."""
    m = Builder("erf_hand")
    x = m.input("x", 3)
    c = m.const("c", 1)
    w, v = m.param("w", [2, 3]), m.param("v", 2)
    S = [2, 3]
    a = m.let("a", imap(2, lambda i: imaps(3, lambda j: w[i][j] * x[j])))
    u = imap(2, lambda i: imaps(3, lambda j: a[i][j] * c[ix_const(1, 0)]))
    g = m.let("g", scaledown(2, a * (one(S) + erf(u))))
    q = m.let("q", derf(v))
    loss = m.let("loss", sum_(2, lambda i: sum_(3, lambda j: g[i][j] * q[i])))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_q = m.grad(q, imaps(2, lambda i: d_loss * sum_(3, lambda j: g[i][j])))
    d_g = m.grad(g, imap(2, lambda i: imaps(3, lambda j: d_loss * q[i])))
    # g = a (1 + erf u) / 2: g′ = ((1 + erf u) + a · derf(u) · c) / 2
    d_a = m.grad(a, scaledown(2, d_g * (one(S) + erf(u)))
                 + imap(2, lambda i: imaps(3, lambda j: scaledown(2, d_g[i][j] * a[i][j])
                                           * derf(u)[i][j] * c[ix_const(1, 0)])))
    m.grad(w, imap(2, lambda i: imaps(3, lambda j: d_a[i][j] * x[j])))
    m.grad(v, d_q * minus((v + v) * derf(v)))
    m.output("loss", loss)
    return m.build()


def max_hand() -> dict:
    """``bin max``, whole-array and under maps, with hand-written gradients: the seed times
    st = step(a − b) goes to a, times 1 − st to b (a tie gives b)."""
    m = Builder("max")
    x, w = m.param("x", [2, 3]), m.param("w", 3)
    S = [2, 3]
    a = m.let("a", imap(2, lambda i: imaps(3, lambda j: x[i][j] * w[j])))
    mx = m.let("mx", maximum(a, x))
    mu = m.let("mu", imap(2, lambda i: imaps(3, lambda j: maximum(w[j], x[i][j]))))
    # loss = Σ_k mx² + mu
    loss = m.let("loss", sum_(S, lambda k: mx[k] * mx[k] + mu[k]))
    m.seed(loss, one(1))
    d_loss = m.grad(loss, one(1))
    d_mu = m.grad(mu, imaps(S, lambda k: d_loss))
    d_mx = m.grad(mx, imaps(S, lambda k: d_loss * (mx[k] + mx[k])))
    st = step(plus(a, minus(x)))
    d_a = m.grad(a, d_mx * st)
    m.grad(x, imap(2, lambda i: imaps(3, lambda j: d_a[i][j] * w[j]
                                             + d_mx[i][j] * _one_minus(st[i][j])
                                             + d_mu[i][j] * _one_minus(
                                                 step(plus(w[j], minus(x[i][j])))))))
    m.grad(w, imaps(3, lambda j: sum_(2, lambda i: d_a[i][j] * x[i][j]
                                      + d_mu[i][j] * step(plus(w[j], minus(x[i][j]))))))
    m.output("loss", loss)
    return m.build()


def maxall_hand() -> dict:
    """``argmax`` (version 5): the largest of 1000 elements, ``m = x[argmax_i x[i]]`` (the
    spec's ``max i. x[i]`` after opt); its gradient, by ``autodiff``, sends the seed to the
    first maximal position: ``imaps v. zero_but(v, argmax_i x[i], d_m)``, whose argmax does not
    depend on v (a kernel computes it once)."""
    m = Builder("maxall")
    x = m.param("x", 1000)
    mx = m.let("m", maxall(1000, lambda i: x[i]))
    m.seed(mx, one(1))
    m.autodiff()
    m.output("loss", mx)
    return m.build()


def lse_hand(stop: bool, n: int = 10, name: str | None = None) -> dict:
    """log-sum-exp of a = w·z (z an input, w a parameter, ``n`` each), shifted by the maximum:
    ``m = a[argmax a]`` (``detach``ed in ``lse_detach``: its derivative 0), ``s = Σ exp(a −
    m)``, ``lse = m + log s``; gradients by ``autodiff``: d_a is the softmax of a (through m
    it cancels, up to rounding, in ``lse_max``). ``lse_long`` (detached, n = 5,000) has sums
    long enough to be added up in blocks (extract/passes/blocksum.py), the last block short;
    its maximum is detached because through it the gradient at the argmax is ``1 − Σ softmax``,
    zero up to rounding, which two correct summation orders (the oracle's and the kernel's)
    round differently by 1e-12 of the largest element: nothing a comparison could decide."""
    m = Builder(name or ("lse_detach" if stop else "lse_max"))
    z, w = m.input("z", n), m.param("w", n)
    a = m.let("a", z * w)
    mx = maxall(n, lambda i: a[i])
    mx = m.let("m", detach(mx) if stop else mx)
    s = m.let("s", sum_(n, lambda i: exp(a[i] + minus(mx))))
    lse = m.let("lse", mx + log(s))
    m.seed(lse, one(1))
    m.autodiff()
    m.output("loss", lse)
    return m.build()


def maxpool_hand() -> dict:
    """``argmax`` over a product shape: 4×4 max-pooling of a [2, [8, 8]] parameter, each
    window the block ``selb`` of a channel at its position p, its max the block at
    ``argmax_{u ∈ [4, 4]}``; loss = Σ pool²; gradients by ``autodiff`` (each window's seed to
    its first maximal position)."""
    m = Builder("maxpool")
    x = m.param("x", [2, [8, 8]])
    W = [4, 4]

    def window(c: T, p: T) -> Callable[[T], T]:
        return lambda u: selb(x[c], p, W)[u]

    pool = m.let("pool", imap(2, lambda c: imaps([2, 2], lambda p: maxall(W, window(c, p)))))
    loss = m.let("loss", sum_([2, [2, 2]], lambda k: pool[k] * pool[k]))
    m.seed(loss, one(1))
    m.autodiff()
    m.output("prediction", pool)
    m.output("loss", loss)
    return m.build()


def _conv(f: T, g: T) -> T:
    """The paper's conv: Σ_{i ∈ s} slide i f · g[i], for f of shape r and g of shape s."""
    w = suc_shape(minus_shape(f.shape, g.shape))
    return sum_(g.shape, lambda i: slide(i, f) * imaps(w, lambda _: g[i]))


def _mconv(inp: T, we: T, b: T) -> T:
    """The paper's mconv: one conv per output channel i (kernel we[i]) plus the bias b[i]."""
    w = suc_shape(minus_shape(inp.shape, we.shape[1]))
    return imap(b.shape, lambda i: _conv(inp, we[i]) + imaps(w, lambda _: b[i]))


def _mconv_back_inp(d_out: T, we: T, inp_shape: Any) -> T:
    """∂/∂inp of mconv: Σ_i Σ_k backslide k (d_out[i] · we[i][k])."""
    u, s = we.shape[0], we.shape[1]
    w = d_out.shape[1]
    t = sum_(u, lambda i: sum_(s, lambda k: backslide(
        k, imaps(w, lambda q: d_out[i][q] * we[i][k]))))
    _need_shape(t, inp_shape, "mconv backward")
    return t


def _mconv_back_we(d_out: T, inp: T, we_shape: Any) -> T:
    """∂/∂we of mconv: we[i][k] ↦ Σ_q d_out[i][q] · (slide k inp)[q]."""
    u, s = we_shape
    w = d_out.shape[1]
    return imap(u, lambda i: imaps(s, lambda k: sum_(w, lambda q: d_out[i][q] * slide(k, inp)[q])))


def _mconv_back_b(d_out: T) -> T:
    return imaps(d_out.shape[0], lambda i: sum_(d_out.shape[1], lambda q: d_out[i][q]))


def _avgp2(a: T) -> T:
    """The paper's avgp₂: the mean of each 2×2 block of a (of shape [2m, 2n])."""
    m, n = a.shape[0] // 2, a.shape[1] // 2
    return imaps([m, n], lambda i: scaledown(4, sum_([2, 2], lambda j: selb(a, i, [2, 2])[j])))


def _avgp2_back(d_s: T) -> T:
    return imapb(d_s.shape, [2, 2], lambda i: imaps([2, 2], lambda _: scaledown(4, d_s[i])))


def _logistic_back(d_y: T, y: T) -> T:
    """∂/∂x of y = logistic x, given y: d_y · y · (1 − y)."""
    return d_y * y * _one_minus(y)


def _cnn_forward(m: Builder) -> dict[str, T]:
    """Declare the paper's CNN in ``m`` (context, chain, seed `one` on `loss`, outputs)."""
    h: dict[str, T] = {}
    h["target"] = m.input("target", [10, [1, [1, [1, 1]]]])
    h["inp"] = m.input("inp", [28, 28])
    h["k1"], h["b1"] = m.param("k1", [6, [5, 5]]), m.param("b1", 6)
    h["k2"], h["b2"] = m.param("k2", [12, [6, [5, 5]]]), m.param("b2", 12)
    h["fc"], h["b"] = m.param("fc", [10, [12, [1, [4, 4]]]]), m.param("b", 10)
    h["c11"] = m.let("c11", _mconv(h["inp"], h["k1"], h["b1"]))
    h["c1"] = m.let("c1", logistic(h["c11"]))
    h["s1"] = m.let("s1", imap(6, lambda i: _avgp2(h["c1"][i])))
    h["c21"] = m.let("c21", _mconv(h["s1"], h["k2"], h["b2"]))
    h["c2"] = m.let("c2", logistic(h["c21"]))
    h["s2"] = m.let("s2", imap(12, lambda i: imap(1, lambda j: _avgp2(h["c2"][i][j]))))
    h["r1"] = m.let("r1", _mconv(h["s2"], h["fc"], h["b"]))
    r = h["r"] = m.let("r", logistic(h["r1"]))
    diff = lambda j: r[j] + -h["target"][j]  # noqa: E731
    h["loss"] = m.let("loss", scaledown(2, sum_(r.shape, lambda j: diff(j) * diff(j))))
    m.seed(h["loss"], one(1))
    m.output("prediction", r)
    m.output("loss", h["loss"])
    return h


def pad_conv() -> dict:
    """A convolution padded by 1 on every side, as the front end's ``conv2d(x, k, b, 1)``
    writes it (the padding inlined: ``slide(i, backslide(centre, x))``), of a parameter image
    into 3 channels, with gradients from ``autodiff``: the forward, the input gradient and the
    weight gradient all have loops bounded by the padding (extract/passes/peel.py, the bounded
    blocks of extract/passes/registers.py)."""
    m = Builder("pad_conv")
    y = m.input("y", [3, [10, 12]])
    x = m.param("x", [10, 12])
    k, b = m.param("k", [3, [3, 3]]), m.param("b", 3)
    c = m.let("c", _mconv(backslide(ix_const([3, 3], [1, 1]), x), k, b))
    e = lambda j: c[j] + -y[j]  # noqa: E731
    loss = m.let("loss", sum_(c.shape, lambda j: e(j) * e(j)))
    m.seed(loss, one(1))
    m.output("loss", loss)
    m.autodiff()
    return m.build()


def cnn_hand() -> dict:
    """The paper's CNN (§4, §6 of the format doc) with gradients derived by hand.

    Not the spec's dump: a stand-in of the same size for testing consumers (and the oracle's
    speed) before the Agda dump exists."""
    m = Builder("cnn")
    h = _cnn_forward(m)
    r, target = h["r"], h["target"]
    d_loss = m.grad(h["loss"], one(1))
    d_r = m.grad(r, imaps(r.shape, lambda j: d_loss * (r[j] + -target[j])))
    d_r1 = m.grad(h["r1"], _logistic_back(d_r, r))
    d_s2 = m.grad(h["s2"], _mconv_back_inp(d_r1, h["fc"], h["s2"].shape))
    d_c2 = m.grad(h["c2"], imap(12, lambda i: imap(1, lambda j: _avgp2_back(d_s2[i][j]))))
    d_c21 = m.grad(h["c21"], _logistic_back(d_c2, h["c2"]))
    d_s1 = m.grad(h["s1"], _mconv_back_inp(d_c21, h["k2"], h["s1"].shape))
    d_c1 = m.grad(h["c1"], imap(6, lambda i: _avgp2_back(d_s1[i])))
    d_c11 = m.grad(h["c11"], _logistic_back(d_c1, h["c1"]))
    m.grad(h["k1"], _mconv_back_we(d_c11, h["inp"], h["k1"].shape))
    m.grad(h["b1"], _mconv_back_b(d_c11))
    m.grad(h["k2"], _mconv_back_we(d_c21, h["s1"], h["k2"].shape))
    m.grad(h["b2"], _mconv_back_b(d_c21))
    m.grad(h["fc"], _mconv_back_we(d_r1, h["s2"], h["fc"].shape))
    m.grad(h["b"], _mconv_back_b(d_r1))
    return m.build()


def cnn_ad() -> dict:
    """The same CNN with gradients from ``autodiff``: unoptimised, in the style of the paper's
    ∇ (zero_but seeds under sums), the heaviest kind of dump the oracle should expect."""
    m = Builder("cnn")
    _cnn_forward(m)
    m.autodiff()
    return m.build()


def const_hand() -> dict:
    """A const (a mask ``m``) read by the forward pass and by a parameter's gradient, declared
    between an input and the parameters: no gradient entry of its own. h = Σⱼ w[i][j]·m[i][j]·x[j]
    + b[i], loss = Σᵢ logistic(h[i])·t[i]."""
    mb = Builder("const_hand")
    x, t = mb.input("x", 3), mb.input("t", 4)
    m = mb.const("m", [4, 3])
    b, w = mb.param("b", 4), mb.param("w", [4, 3])
    h = mb.let("h", imaps(4, lambda i: sum_(3, lambda j: w[i][j] * m[i][j] * x[j])) + b)
    p = mb.let("p", logistic(h))
    loss = mb.let("loss", sum_(4, lambda i: p[i] * t[i]))
    mb.seed(loss, one(1))
    d_loss = mb.grad(loss, one(1))
    d_p = mb.grad(p, imaps(4, lambda i: d_loss * t[i]))
    d_h = mb.grad(h, d_p * p * _one_minus(p))
    mb.grad(b, d_h)
    mb.grad(w, imap(4, lambda i: imaps(3, lambda j: d_h[i] * m[i][j] * x[j])))
    mb.output("prediction", p)
    mb.output("loss", loss)
    return mb.build()


def const_only() -> dict:
    """A model whose only stored array is a const: no parameter, no parameter gradient
    (loss = Σᵢ x[i]·m[i]·x[i])."""
    mb = Builder("const_only")
    x, m = mb.input("x", 3), mb.const("m", 3)
    loss = mb.let("loss", sum_(3, lambda i: x[i] * m[i] * x[i]))
    mb.seed(loss, one(1))
    mb.grad(loss, one(1))
    mb.output("loss", loss)
    return mb.build()


def inline_hand() -> dict:
    """Bindings the lane kernels compute where they are read (extract/passes/inline.py): ``p`` in
    the chain binding ``q``, ``u`` (the one binding that reads the input) in the parameter gradient
    ``d_b``, so that the lane kernels' forward pass reads no input and their backward pass no
    chain value; ``d_q`` into ``d_p`` into ``d_w``. Not derivatives (only the extractor's and
    the validator's handling is exercised)."""
    m = Builder("inline_hand")
    x = m.input("x", 4)
    w, b = m.param("w", 4), m.param("b", 4)
    p = m.let("p", w * w)
    q = m.let("q", logistic(p))
    u = m.let("u", x * b)
    loss = m.let("l", sum_(4, lambda i: q[i] * q[i]))
    m.seed(loss, one(1))
    m.grad(loss, one(1))
    m.grad(u, one(4))
    d_q = m.grad(q, one(4))
    d_p = m.grad(p, d_q + d_q)
    m.grad(w, d_p * w)
    m.grad(b, u * x)
    m.output("loss", loss)
    return m.build()


EXAMPLES: dict[str, Callable[[], dict]] = {
    "dot_hand": dot_hand,
    "chain_hand": chain_hand,
    "ops_map": ops_map_hand,
    "ops_block": ops_block_hand,
    "ops_slide": ops_slide_hand,
    "pad_const": pad_const_hand,
    "unary": unary_hand,
    "sqrt": sqrt_hand,
    "erf": erf_hand,
    "max": max_hand,
    "cnn_hand": cnn_hand,
    "cnn_ad": cnn_ad,
    "pad_conv": pad_conv,
    "inline_hand": inline_hand,
    "const_hand": const_hand,
    "const_only": const_only,
    "maxall": maxall_hand,
    "lse_max": lambda: lse_hand(False),
    "lse_detach": lambda: lse_hand(True),
    "lse_long": lambda: lse_hand(True, 5000, "lse_long"),
    "maxpool": maxpool_hand,
}


def main(argv: Sequence[str] | None = None) -> None:
    """Write the example dumps to a folder (default: tests/data next to this file)."""
    import argparse
    import os
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("out", nargs="?", default=os.path.join(os.path.dirname(__file__), "data"))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name, make in EXAMPLES.items():
        save(make(), os.path.join(args.out, name + ".json"))
        print(os.path.join(args.out, name + ".json"))




if __name__ == "__main__":
    main()

"""The typed IR of an expression dump (docs/dump-format.md §4), as frozen dataclasses.

Invariants (established by ``extract.ir.dump.parse``, relied on by every pass):

- every node carries its ``shape`` (a ``Shape``: an ``int`` leaf or a pair ``(s, p)``) and its
  sort (class attribute ``sort``: ``"ar"`` or ``"ix"``), and the shape agrees with its children
  by the rules of §4;
- variables are resolved: a ``Var`` names an array of the model (``kind`` is ``"context"``,
  ``"chain"`` or ``"grad"``) or an index variable bound by an enclosing binder (``kind`` is
  ``"index"``); binder variables are named by role and depth (``i0`` for an outermost imap,
  ``t1`` for a sum under one binder, ``k2`` for the ix_minus family), so nested binders have
  distinct names and equal subterms at equal depths are equal;
- an ``IxConst`` position has the tree of its shape, each leaf below its dimension;
- nodes are hashable and compare structurally, so passes may memoise on them.

``show`` prints an expression as one readable line per binder, for debugging.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Union

Shape = Union[int, tuple]  # int leaf, or a pair (Shape, Shape)


# ---------------------------------------------------------------------------------------------
# shapes

def leaves(s: Shape) -> tuple[int, ...]:
    """The leaves of a shape, left to right (the dimensions of its row-major layout)."""
    if isinstance(s, int):
        return (s,)
    return leaves(s[0]) + leaves(s[1])


def size(s: Shape) -> int:
    n = 1
    for leaf in leaves(s):
        n *= leaf
    return n


def same_structure(s: Shape, p: Shape) -> bool:
    if isinstance(s, int) or isinstance(p, int):
        return isinstance(s, int) and isinstance(p, int)
    return same_structure(s[0], p[0]) and same_structure(s[1], p[1])


def leafwise(f, s: Shape, p: Shape) -> Shape:
    if isinstance(s, int):
        return f(s, p)
    return (leafwise(f, s[0], p[0]), leafwise(f, s[1], p[1]))


def shape_plus(s: Shape, p: Shape) -> Shape:   # s + p ≈ r
    return leafwise(lambda a, b: a + b, s, p)


def shape_suc(p: Shape) -> Shape:              # suc p ≈ u
    return leafwise(lambda a, _: a + 1, p, p)


def shape_times(s: Shape, p: Shape) -> Shape:  # s * p ≈ q
    return leafwise(lambda a, b: a * b, s, p)


def show_shape(s: Shape) -> str:
    if isinstance(s, int):
        return str(s)
    return f"[{show_shape(s[0])}, {show_shape(s[1])}]"


def shape_from_json(x) -> Shape:
    if isinstance(x, list):
        return (shape_from_json(x[0]), shape_from_json(x[1]))
    return x


# ---------------------------------------------------------------------------------------------
# expression nodes

@dataclass(frozen=True)
class Node:
    shape: Shape
    sort = "ar"

    child_fields = ()   # names of the child nodes (class attribute, not a field)

    def children(self) -> tuple["Node", ...]:
        return tuple(getattr(self, f) for f in self.child_fields)


@dataclass(frozen=True)
class Var(Node):
    name: str = ""
    kind: str = "context"   # context | chain | grad | index
    var_sort: str = "ar"

    @property
    def sort(self):  # type: ignore[override]
        return self.var_sort


@dataclass(frozen=True)
class Zero(Node):
    pass


@dataclass(frozen=True)
class One(Node):
    pass


@dataclass(frozen=True)
class IMapS(Node):
    s: Shape = 1
    var: str = ""
    body: Node = None
    child_fields = ("body",)


@dataclass(frozen=True)
class SelS(Node):
    a: Node = None
    i: Node = None
    child_fields = ("a", "i")


@dataclass(frozen=True)
class IMap(Node):
    s: Shape = 1
    var: str = ""
    body: Node = None
    child_fields = ("body",)


@dataclass(frozen=True)
class Sel(Node):
    a: Node = None
    i: Node = None
    child_fields = ("a", "i")


@dataclass(frozen=True)
class IMapB(Node):
    s: Shape = 1
    p: Shape = 1
    var: str = ""
    body: Node = None
    child_fields = ("body",)


@dataclass(frozen=True)
class SelB(Node):
    s: Shape = 1
    p: Shape = 1
    a: Node = None
    i: Node = None
    child_fields = ("a", "i")


@dataclass(frozen=True)
class Sum(Node):
    s: Shape = 1
    var: str = ""
    body: Node = None
    child_fields = ("body",)


@dataclass(frozen=True)
class ZeroBut(Node):
    i: Node = None
    j: Node = None
    a: Node = None
    child_fields = ("i", "j", "a")


@dataclass(frozen=True)
class Slide(Node):
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    a: Node = None
    child_fields = ("i", "a")


@dataclass(frozen=True)
class Backslide(Node):
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    a: Node = None
    child_fields = ("i", "a")


# The elementwise functions (``un f`` of the Agda spec); each is its own op in the dump (§4):
# logistic 1/(1 + e^-x), exp, log, recip 1/x, sqrt (version 4), relu (x if x > 0 else 0), step
# (1 if x > 0 else 0), detach (version 5: the identity, whose derivative the spec declares 0; the
# gradients in a dump already say so, so ``lower_to_loops`` computes it as its argument).
# erf and derf (version 6): the error function and its derivative (2/√π) e^(−x²)
UNARY = ("logistic", "exp", "log", "recip", "sqrt", "relu", "step", "detach", "erf", "derf")


@dataclass(frozen=True)
class Un(Node):
    """The elementwise function ``fn`` (one of ``UNARY``) applied to ``a``."""
    fn: str = "logistic"
    a: Node = None
    child_fields = ("a",)


@dataclass(frozen=True)
class Bin(Node):
    fn: str = "plus"        # plus | mul | max (max: a - b <= 0 ? b : a, ties give b)
    a: Node = None
    b: Node = None
    child_fields = ("a", "b")


@dataclass(frozen=True)
class ScaleDown(Node):
    n: int = 1
    a: Node = None
    child_fields = ("a",)


@dataclass(frozen=True)
class Minus(Node):
    a: Node = None
    child_fields = ("a",)


@dataclass(frozen=True)
class IxConst(Node):
    """The constant position ``pos``: a tree of ints nested like ``shape``, each leaf below
    its dimension."""
    sort = "ix"
    pos: Shape = 0


@dataclass(frozen=True)
class Div(Node):
    sort = "ix"
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    child_fields = ("i",)


@dataclass(frozen=True)
class Mod(Node):
    sort = "ix"
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    child_fields = ("i",)


@dataclass(frozen=True)
class IxPlus(Node):
    sort = "ix"
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    j: Node = None
    child_fields = ("i", "j")


@dataclass(frozen=True)
class IxMinus(Node):
    """``k = i − j`` with ``k`` of shape ``u`` (``suc p ≈ u``); body evaluated at ``k``."""
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    j: Node = None
    var: str = ""
    body: Node = None
    child_fields = ("i", "j", "body")


@dataclass(frozen=True)
class IxMinusR(Node):
    """``k = i − j`` with ``k`` of shape ``s``; body evaluated at ``k``."""
    s: Shape = 1
    p: Shape = 1
    i: Node = None
    j: Node = None
    var: str = ""
    body: Node = None
    child_fields = ("i", "j", "body")


@dataclass(frozen=True)
class ArgMax(Node):
    """The first position of ``s`` (row-major) at which ``body`` (ar ``1``, binding ``var`` of
    shape ``s``) is largest: ``best`` starts at 0 and moves to ``i`` when ``body(best) <
    body(i)`` (strict, so ties keep the earlier position; a NaN never wins nor loses). Every
    leaf of ``s`` is at least 1 (version 5)."""
    sort = "ix"
    s: Shape = 1
    var: str = ""
    body: Node = None
    child_fields = ("body",)


BINDERS = (IMapS, IMap, IMapB, Sum, IxMinus, IxMinusR, ArgMax)


def _cached_hash(cls) -> None:
    """``cls``'s structural hash computed once per node: AD shares subterms, so a hash that
    walked the tree on every call (a dict keyed by expressions) visited a shared subterm once
    per path to it (52 M calls generating a 6,000-binding chain)."""
    walk = cls.__hash__

    def __hash__(self):
        try:
            return self.__dict__["_h"]
        except KeyError:
            h = walk(self)
            object.__setattr__(self, "_h", h)
            return h
    cls.__hash__ = __hash__


for _cls in [c for c in list(globals().values())
             if isinstance(c, type) and issubclass(c, Node)]:
    _cached_hash(_cls)


class Names:
    """The names a kernel's new locals must not take: ``base``, the model's (shared by every
    kernel and never copied: a copy per kernel made code generation quadratic in the
    bindings), and the kernel's own, ``own``, to which ``add`` adds."""

    def __init__(self, base, own=()):
        self.base, self.own = base, set(own)

    def __contains__(self, name) -> bool:
        return name in self.own or name in self.base

    def add(self, name: str) -> None:
        self.own.add(name)


def fresh_name(base: str, taken) -> str:
    """``base``, or ``base_``, ``base__``, ... : the first that is not in ``taken`` (the names
    a new C local must not hide or repeat)."""
    while base in taken:
        base += "_"
    return base


def depth(e: Node) -> int:
    """Nodes on the longest path from ``e`` to a leaf, without recursion (shared subterms, as
    AD makes them, are measured once)."""
    known: dict[int, int] = {}
    todo = [(e, False)]
    while todo:
        x, ready = todo.pop()
        if id(x) in known:
            continue
        kids = x.children()
        if ready:
            known[id(x)] = 1 + max((known[id(c)] for c in kids), default=0)
        else:
            todo.append((x, True))
            todo.extend((c, False) for c in kids if id(c) not in known)
    return known[id(e)]


def reads(e: Node) -> frozenset:
    """The names of the arrays (inputs, parameters, chain bindings) an expression reads."""
    out, todo = set(), [e]
    while todo:
        x = todo.pop()
        if isinstance(x, Var) and x.kind in ("context", "chain"):
            out.add(x.name)
        todo.extend(x.children())
    return frozenset(out)


def _has_sum(e: Node) -> bool:
    return (isinstance(e, Sum) and size(e.s) > 1) or any(_has_sum(c) for c in e.children())


def inline_sum(e: Node, under: str | None = None) -> str | None:
    """The elementwise function (``logistic``, ``exp``, …) a sum of ``e`` sits under, if one
    does: a sum written inside an expression rather than bound on its own, whose gradient
    needs the function's argument, the sum, again. Sums over one element (the ONNX
    importer's broadcast of a size-1 axis) cost nothing and do not count. (The front end warns
    with it; ``lower`` names it when a sum would be recomputed.)"""
    if isinstance(e, Sum) and size(e.s) > 1:
        return under
    if isinstance(e, Un) and _has_sum(e.a):
        return inline_sum(e.a, e.fn)
    return next((w for c in e.children() if (w := inline_sum(c, under))), None)


def rewrite(e: Node, f) -> Node:
    """``e`` with each outermost subterm ``t`` for which ``f(t)`` is a node replaced by that node
    (``f`` returns None to look inside ``t``); unchanged subtrees are shared, not copied."""
    new = f(e)
    if new is not None:
        return new
    changes = {}
    for name in e.child_fields:
        child = getattr(e, name)
        out = rewrite(child, f)
        if out is not child:
            changes[name] = out
    return replace(e, **changes) if changes else e


# ---------------------------------------------------------------------------------------------
# the model

@dataclass(frozen=True)
class Array:
    """A named array of the model: a context variable, a chain binding or a gradient entry."""
    name: str
    shape: Shape
    kind: str                 # context | chain | grad
    role: str = ""            # context: input | param | const; grad: the name it is taken w.r.t.
    expr: Node | None = None  # chain bindings and gradients


@dataclass(frozen=True)
class Model:
    name: str
    version: int
    generator: str
    context: tuple[Array, ...]
    chain: tuple[Array, ...]
    seed_of: str
    seed: Node
    gradients: tuple[Array, ...]
    outputs: tuple[tuple[str, str], ...] = ()
    dump_hash: str = ""
    data: tuple[tuple[str, str], ...] = ()      # ("features", name), ("target", name)
    fan_in: tuple[tuple[str, int], ...] = ()    # (param, inputs feeding its layer)
    arrays: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def inputs(self) -> tuple[Array, ...]:
        return tuple(a for a in self.context if a.role == "input")

    @property
    def params(self) -> tuple[Array, ...]:
        """The trainable parameters: one gradient each."""
        return tuple(a for a in self.context if a.role == "param")

    @property
    def stored(self) -> tuple[Array, ...]:
        """The parameters and the consts, in context order: the arrays the weights hold (the
        C struct ``M_params``), shared by every sample."""
        return tuple(a for a in self.context if a.role in ("param", "const"))

    def output(self, key: str) -> str | None:
        return dict(self.outputs).get(key)

    def param_gradient(self, param: str) -> Array:
        return next(g for g in self.gradients if g.role == param)


# ---------------------------------------------------------------------------------------------
# debug printer

def show(e: Node) -> str:
    """A compact one-line rendering of an expression (for error messages and debugging)."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Zero):
        return "zero"
    if isinstance(e, One):
        return "one"
    if isinstance(e, (IMapS, IMap, Sum, ArgMax)):
        op = {IMapS: "imaps", IMap: "imap", Sum: "sum", ArgMax: "argmax"}[type(e)]
        return f"{op} {e.var}<{show_shape(e.s)}>. {show(e.body)}"
    if isinstance(e, IMapB):
        return f"imapb {e.var}<{show_shape(e.s)}|{show_shape(e.p)}>. {show(e.body)}"
    if isinstance(e, (SelS, Sel)):
        return f"{_atom(e.a)}[{show(e.i)}]"
    if isinstance(e, SelB):
        return f"{_atom(e.a)}[{show(e.i)} block {show_shape(e.p)}]"
    if isinstance(e, ZeroBut):
        return f"({show(e.i)} == {show(e.j)} ? {show(e.a)} : 0)"
    if isinstance(e, Slide):
        return f"slide({show(e.i)}, {show(e.a)})"
    if isinstance(e, Backslide):
        return f"backslide({show(e.i)}, {show(e.a)})"
    if isinstance(e, Un):
        return f"{e.fn}({show(e.a)})"
    if isinstance(e, Bin):
        if e.fn == "max":
            return f"max({show(e.a)}, {show(e.b)})"
        op = "+" if e.fn == "plus" else "*"
        return f"{_atom(e.a)} {op} {_atom(e.b)}"
    if isinstance(e, ScaleDown):
        return f"{_atom(e.a)} / {e.n}"
    if isinstance(e, Minus):
        return f"-{_atom(e.a)}"
    if isinstance(e, IxConst):
        return show_shape(e.pos)
    if isinstance(e, Div):
        return f"{_atom(e.i)} div {show_shape(e.p)}"
    if isinstance(e, Mod):
        return f"{_atom(e.i)} mod {show_shape(e.p)}"
    if isinstance(e, IxPlus):
        return f"{_atom(e.i)} + {_atom(e.j)}"
    if isinstance(e, (IxMinus, IxMinusR)):
        return f"let {e.var} = {_atom(e.i)} - {_atom(e.j)} in {show(e.body)}"
    raise TypeError(type(e).__name__)


def _atom(e: Node) -> str:
    text = show(e)
    if isinstance(e, (Var, Zero, One, SelS, Sel, SelB, Un, Slide, Backslide, ZeroBut,
                      IxConst)):
        return text
    return f"({text})"


def dump_tree(e: Node, indent: int = 0) -> str:
    """A multi-line rendering, one node per line with its shape (the IR debug printer)."""
    pad = "  " * indent
    attrs = []
    for name in ("name", "kind", "fn", "n", "var"):
        if hasattr(e, name) and name not in getattr(e, "child_fields", ()):
            value = getattr(e, name)
            if value not in ("", None):
                attrs.append(f"{name}={value}")
    for name in ("s", "p", "pos"):
        if hasattr(e, name):
            attrs.append(f"{name}={show_shape(getattr(e, name))}")
    head = f"{pad}{type(e).__name__} {e.sort} {show_shape(e.shape)}"
    if attrs:
        head += " (" + ", ".join(attrs) + ")"
    lines = [head]
    for f in e.child_fields:
        lines.append(f"{pad}  .{f}:")
        lines.append(dump_tree(getattr(e, f), indent + 2))
    return "\n".join(lines)

"""The math of an expression before layout, for ``extract/render/render.py``.

Index terms (``IConst``, ``IVar``, ``IAdd``, ``ISub``, ``IScale``, ``IFloor``, ``IMod``,
``IArg``: a leaf of an argmax) are the value of one leaf of a position; their constructors
(``iadd``, ``isub``, …) simplify only what is known (``x + 0`` is ``x``, ``x mod 1`` is 0), and
``bounds`` gives the range of a term from the ranges of its variables, so that a window's
condition implied by them is dropped::

    isub(IVar("j"), IVar("t"))  with j < 12, t < 5  ->  bounds -4 .. 11: write [0 ≤ j − t < 8]

Math nodes (``MConst``, ``MArr``, ``MElem``, ``MAdd``, ``MMul``, ``MNeg``, ``MScale``, ``MSum``,
``MApp``, ``MSqrt``, ``MMax``, ``MMaxOver``, ``MPow``, ``MIverson``) are the formula of an
array expression at a position; ``madd`` and ``mmul`` flatten sums and products, write
``a + (−b)`` as ``a − b`` and ``x · x`` as ``x²``, and put the Iverson brackets of a product in
front.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import ir

# ---------------------------------------------------------------------------------------------
# index terms: one per leaf of a position

@dataclass(frozen=True)
class IConst:
    n: int


@dataclass(frozen=True)
class IVar:
    name: str


@dataclass(frozen=True)
class IAdd:
    a: object
    b: object


@dataclass(frozen=True)
class ISub:
    a: object
    b: object


@dataclass(frozen=True)
class IScale:
    c: int
    a: object


@dataclass(frozen=True)
class IFloor:
    a: object
    c: int


@dataclass(frozen=True)
class IMod:
    a: object
    c: int


@dataclass(frozen=True)
class IArg:
    """Leaf ``k`` of ``argmax_{vars} body``: the first position (row-major over ``vars``,
    (name, extent) of the leaves of extent ≠ 1) where the math ``body`` is largest."""
    vars: tuple
    body: object
    k: int


ZERO = IConst(0)


def iadd(a, b):
    if a == ZERO:
        return b
    if b == ZERO:
        return a
    if isinstance(a, IConst) and isinstance(b, IConst):
        return IConst(a.n + b.n)
    return IAdd(a, b)


def isub(a, b):
    if b == ZERO:
        return a
    if a == b:
        return ZERO
    if isinstance(a, IConst) and isinstance(b, IConst):
        return IConst(a.n - b.n)
    return ISub(a, b)


def iscale(c: int, a):
    if c == 1:
        return a
    if a == ZERO or c == 0:
        return ZERO
    return IScale(c, a)


def ifloor(a, c: int):
    if c == 1:
        return a
    if isinstance(a, IConst) and c:
        return IConst(a.n // c)
    return IFloor(a, c)


def imod(a, c: int):
    if c == 1:
        return ZERO
    if isinstance(a, IConst) and c:
        return IConst(a.n % c)
    return IMod(a, c)


def bounds(t, ranges: dict) -> tuple[int, int]:
    """The least and greatest value of an index term, the variables ranging over their
    extents (``ranges``: name -> extent)."""
    if isinstance(t, IConst):
        return t.n, t.n
    if isinstance(t, IVar):
        return 0, ranges[t.name] - 1
    if isinstance(t, (IAdd, ISub)):
        alo, ahi = bounds(t.a, ranges)
        blo, bhi = bounds(t.b, ranges)
        return (alo + blo, ahi + bhi) if isinstance(t, IAdd) else (alo - bhi, ahi - blo)
    if isinstance(t, IScale):
        lo, hi = bounds(t.a, ranges)
        return t.c * lo, t.c * hi
    if isinstance(t, IFloor):
        lo, hi = bounds(t.a, ranges)
        return lo // t.c, hi // t.c
    if isinstance(t, IMod):
        return 0, t.c - 1
    if isinstance(t, IArg):
        return 0, t.vars[t.k][1] - 1
    raise TypeError(type(t).__name__)


def units_zero(terms, shape: ir.Shape) -> tuple:
    """A position of ``shape``: on a leaf of extent 1 the index can only be 0."""
    return tuple(ZERO if n == 1 else t for t, n in zip(terms, ir.leaves(shape)))


# ---------------------------------------------------------------------------------------------
# the math of an expression (before layout)

@dataclass(frozen=True)
class MConst:
    n: int


@dataclass(frozen=True)
class MArr:              # a whole array (elementwise bindings)
    name: str


@dataclass(frozen=True)
class MElem:             # an element; idx: the index terms of the leaves of extent ≠ 1
    name: str
    idx: tuple


@dataclass(frozen=True)
class MAdd:
    terms: tuple         # (sign "+" | "−", M)


@dataclass(frozen=True)
class MMul:
    factors: tuple
    op: str = "·"        # "⊙" between whole arrays


@dataclass(frozen=True)
class MNeg:
    a: object


@dataclass(frozen=True)
class MScale:            # scaledown: a / n
    a: object
    n: int


@dataclass(frozen=True)
class MSum:
    vars: tuple          # (name, extent)
    body: object


@dataclass(frozen=True)
class MApp:
    fn: str
    a: object


@dataclass(frozen=True)
class MSqrt:
    """√a (sqrt)"""
    a: object


@dataclass(frozen=True)
class MMax:
    """max(a, b)"""
    a: object
    b: object


@dataclass(frozen=True)
class MMaxOver:
    """max_{vars} body: the maximum of ``body`` over the positions ``vars`` ((name, extent)),
    a max-reduction (``sels (imaps b) (argmax b)``)"""
    vars: tuple
    body: object


@dataclass(frozen=True)
class MPow:
    a: object
    k: int


@dataclass(frozen=True)
class MIverson:
    conds: tuple         # ("eq", a, b) | ("range", t, lower: bool, upper: int | None)


def _negated(x):
    """``y`` when ``x`` is ``−y`` or a product whose first factor is negated, else None."""
    if isinstance(x, MNeg):
        return x.a
    if isinstance(x, MMul) and isinstance(x.factors[0], MNeg):
        first = x.factors[0].a
        rest = x.factors[1:]
        return MMul((first, *rest), x.op)
    return None


def madd(a, b):
    """``a + b`` as one sum of signed terms: ``a + (−c)·d`` is ``a − c·d``."""
    terms = []
    for x in (a, b):
        if isinstance(x, MAdd):
            terms.extend(x.terms)
        elif terms and _negated(x) is not None:
            terms.append(("−", _negated(x)))
        else:
            terms.append(("+", x))
    return MAdd(tuple(terms))


def mmul(a, b, op: str = "·"):
    factors = []
    for x in (a, b):
        factors.extend(x.factors if isinstance(x, MMul) and x.op == op else (x,))
    conds = tuple(c for f in factors if isinstance(f, MIverson) for c in f.conds)
    rest = [f for f in factors if not isinstance(f, MIverson)]
    if op == "·":                  # x · x is x²
        merged = []
        for f in rest:
            if merged and isinstance(merged[-1], MPow) and merged[-1].k > 0 and \
                    merged[-1].a == f:
                merged[-1] = MPow(f, merged[-1].k + 1)
            elif merged and merged[-1] == f:
                merged[-1] = MPow(f, 2)
            else:
                merged.append(f)
        rest = merged
    factors = ([MIverson(conds)] if conds else []) + rest
    return factors[0] if len(factors) == 1 else MMul(tuple(factors), op)


def _args(t) -> set:
    """The argmaxes ((vars, body)) whose leaves an index term reads."""
    if isinstance(t, IArg):
        return {(t.vars, t.body)}
    if isinstance(t, (IAdd, ISub)):
        return _args(t.a) | _args(t.b)
    if isinstance(t, (IScale, IFloor, IMod)):
        return _args(t.a)
    return set()


def _at_vars(t):
    """``t`` with each leaf of an argmax replaced by the argmax's own variable."""
    if isinstance(t, IArg):
        return IVar(t.vars[t.k][0])
    if isinstance(t, IAdd):
        return iadd(_at_vars(t.a), _at_vars(t.b))
    if isinstance(t, ISub):
        return isub(_at_vars(t.a), _at_vars(t.b))
    if isinstance(t, IScale):
        return iscale(t.c, _at_vars(t.a))
    if isinstance(t, IFloor):
        return ifloor(_at_vars(t.a), t.c)
    if isinstance(t, IMod):
        return imod(_at_vars(t.a), t.c)
    return t


def maximum(m: MElem):
    """``max_{vars} body`` when the element ``m`` is read at ``argmax_{vars} body`` and is, at
    the argmax's variables, that very body (the maximum ``sels (imaps b) (argmax b)`` after the
    optimiser: ``x_{argmax_p x_p}`` is ``max_p x_p``); else None."""
    found = set().union(*(_args(t) for t in m.idx)) if m.idx else set()
    if len(found) != 1:
        return None
    (names, body), = found
    return MMaxOver(names, body) if MElem(m.name, tuple(map(_at_vars, m.idx))) == body else None


def has_sum(m) -> bool:
    """Whether ``m`` holds a reduction (a sum or a maximum over positions)."""
    if isinstance(m, (MSum, MMaxOver)):
        return True
    for x in (getattr(m, "a", None), getattr(m, "body", None)):
        if x is not None and not isinstance(x, (str, int)) and has_sum(x):
            return True
    if isinstance(m, MMax) and has_sum(m.b):
        return True
    if isinstance(m, MAdd):
        return any(has_sum(t) for _, t in m.terms)
    if isinstance(m, MMul):
        return any(has_sum(f) for f in m.factors)
    return False

"""The loop IR: what ``lower_to_loops`` produces and ``printer`` prints.

Three layers, all immutable:

- **index expressions** ``Affine``: integer linear combinations of atoms (loop variables
  ``IVar``, and ``IDiv``/``IMod`` of affine expressions by constants) plus a constant. An
  ``argmax`` (dump version 5) is, until the scheduler places it, the atom ``IArg`` (the flat
  row-major position over its own loop variables at which its body is largest); placed, it is
  an ``IVar`` that no loop binds: the ``int`` local ``ArgDecl`` declares and ``ArgStep``
  updates. The smart
  constructors ``idiv``/``imod`` simplify by interval reasoning: ``(4*i + j) div 4`` is ``i``
  when ``0 <= j < 4``. Every atom has a known range, so ``Affine.range`` is exact enough to fold
  conditions that always hold.
- **scalar expressions** ``Lit``, ``Load``, ``Local``, ``Add``, ``Mul``, ``Neg``, ``Scale``
  (division by a positive integer), ``Un`` (an elementwise function: ``logistic``, ``exp``,
  ``log``, ``recip``, ``sqrt``, ``relu``, ``step``, ``erf``, ``derf``), ``Max`` (``max(a, b)``), ``Select``
  (``cond ? a : 0``) and ``Reduce`` (a sum over loop variables, turned into a scalar
  accumulator by the scheduler). The smart constructors fold constants and push ``Select``
  outwards; ``reduce`` removes a sum whose body is non-zero at one point only (``Σ_t [t == e]
  x(t) = x(e)``).
- **statements** ``For``, ``Store`` (``=`` or ``+=`` into an output buffer), ``Decl``, ``Acc``
  and ``Assign`` of scalar locals, ``If``, ``Comment``, ``ArgDecl`` and ``ArgStep`` (an argmax
  loop's position and its step), and ``Buffer``, a small local array
  (only the lanes pass makes them: one value of a scalar local per sample lane); and, in the
  kernels a group's threads share (extract/passes/divide.py, the last pass), ``Divided``,
  ``OnePart`` and ``Barrier``.

Conditions are tuples of constraints (a conjunction); a constraint is ``Cmp(a, "ge")`` for
``a >= 0`` or ``Cmp(a, "eq")`` for ``a == 0``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Union


class _Hashed:
    """Frozen nodes with a cached structural hash (IR trees are hashed many times)."""

    def __hash__(self):
        try:
            return self.__dict__["_h"]
        except KeyError:
            h = hash((type(self).__name__,) + tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_h", h)
            return h


# ---------------------------------------------------------------------------------------------
# index expressions

@dataclass(frozen=True, eq=True)
class IVar(_Hashed):
    name: str
    extent: int
    rank: int = 0      # creation order: outer loops print first in sums of terms

    @property
    def range(self):
        return (0, self.extent - 1)


@dataclass(frozen=True, eq=True)
class IDiv(_Hashed):
    a: "Affine"
    d: int

    @property
    def range(self):
        lo, hi = self.a.range
        return (lo // self.d, hi // self.d)


@dataclass(frozen=True, eq=True)
class IMod(_Hashed):
    a: "Affine"
    d: int

    @property
    def range(self):
        return (0, self.d - 1)


@dataclass(frozen=True, eq=True)
class IArg(_Hashed):
    """An argmax not yet placed: the flat row-major position ``at`` (over the loop variables
    ``vars``, of ``n`` positions) of the first largest value of ``body``. Only
    ``lower._Kernel`` sees it: its scheduler replaces it by an ``IVar`` local (``ArgDecl``,
    ``ArgStep``), hoisted like a ``Reduce``."""
    vars: tuple
    at: "Affine"
    n: int
    body: "RExpr"
    origin: object = None    # the ir.ArgMax (for messages); not compared

    def __eq__(self, other):
        return isinstance(other, IArg) and (self.vars, self.at, self.body) == \
            (other.vars, other.at, other.body)

    def __hash__(self):
        try:
            return self.__dict__["_h"]
        except KeyError:
            h = hash(("IArg", self.vars, self.at, self.body))
            object.__setattr__(self, "_h", h)
            return h

    @property
    def range(self):
        return (0, self.n - 1)

    def ivars(self) -> set:
        return free_ivars(self.body) - set(self.vars)


Atom = Union[IVar, IDiv, IMod, IArg]


def _atom_key(a: Atom):
    if isinstance(a, IVar):
        return (0, a.rank, a.name)
    return (1, str(a))


@dataclass(frozen=True, eq=True)
class Affine(_Hashed):
    terms: tuple = ()      # ((atom, coeff), ...) sorted by _atom_key, coeff != 0
    const: int = 0

    @staticmethod
    def of(x: Union[int, Atom]) -> "Affine":
        if isinstance(x, int):
            return Affine((), x)
        if isinstance(x, IVar) and x.extent == 1:
            return Affine((), 0)
        return Affine(((x, 1),), 0)

    def __add__(self, other: "Affine") -> "Affine":
        if isinstance(other, int):
            other = Affine.of(other)
        acc = dict(self.terms)
        for a, c in other.terms:
            acc[a] = acc.get(a, 0) + c
        return _mk(acc, self.const + other.const)

    def __neg__(self) -> "Affine":
        return Affine(tuple((a, -c) for a, c in self.terms), -self.const)

    def __sub__(self, other: "Affine") -> "Affine":
        if isinstance(other, int):
            other = Affine.of(other)
        return self + (-other)

    def scale(self, k: int) -> "Affine":
        if k == 0:
            return Affine()
        return Affine(tuple((a, c * k) for a, c in self.terms), self.const * k)

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def range(self):
        lo = hi = self.const
        for a, c in self.terms:
            alo, ahi = a.range
            if c > 0:
                lo, hi = lo + c * alo, hi + c * ahi
            else:
                lo, hi = lo + c * ahi, hi + c * alo
        return (lo, hi)

    def ivars(self) -> set:
        out = set()
        for a, _ in self.terms:
            if isinstance(a, IVar):
                out.add(a)
            elif isinstance(a, IArg):
                out |= a.ivars()
            else:
                out |= a.a.ivars()
        return out

    def coeff(self, v: IVar) -> int:
        return dict(self.terms).get(v, 0)

    def subst(self, m: dict) -> "Affine":
        """Replace loop variables by affine expressions (``m``: IVar -> Affine)."""
        out = Affine((), self.const)
        for a, c in self.terms:
            if isinstance(a, IVar):
                out = out + (m[a] if a in m else Affine.of(a)).scale(c)
            elif isinstance(a, IArg):
                inner = {k: v for k, v in m.items() if k not in a.vars}
                out = out + Affine.of(IArg(a.vars, a.at, a.n, subst(a.body, inner),
                                           a.origin)).scale(c)
            elif isinstance(a, IDiv):
                out = out + idiv(a.a.subst(m), a.d).scale(c)
            else:
                out = out + imod(a.a.subst(m), a.d).scale(c)
        return out


def _mk(acc: dict, const: int) -> Affine:
    terms = tuple(sorted(((a, c) for a, c in acc.items() if c != 0),
                         key=lambda t: _atom_key(t[0])))
    return Affine(terms, const)


def _split(a: Affine, d: int):
    """a = d*q + r with the terms of q those whose coefficient d divides."""
    q, r = {}, {}
    for atom, c in a.terms:
        if c % d == 0:
            q[atom] = c // d
        else:
            r[atom] = c
    cq, cr = divmod(a.const, d)
    return _mk(q, cq), _mk(r, cr)


def idiv(a: Affine, d: int) -> Affine:
    """``a div d`` for ``a >= 0``."""
    if d == 1:
        return a
    q, r = _split(a, d)
    lo, hi = r.range
    if 0 <= lo and hi < d:
        return q
    if lo >= 0:
        return q + Affine.of(IDiv(r, d))
    return Affine.of(IDiv(a, d))


def imod(a: Affine, d: int) -> Affine:
    """``a mod d`` for ``a >= 0``."""
    if d == 1:
        return Affine()
    _, r = _split(a, d)
    lo, hi = r.range
    if 0 <= lo and hi < d:
        return r
    if lo >= 0:
        return Affine.of(IMod(r, d))
    return Affine.of(IMod(a, d))


# ---------------------------------------------------------------------------------------------
# conditions

@dataclass(frozen=True, eq=True)
class Cmp(_Hashed):
    a: Affine
    op: str   # "ge": a >= 0; "eq": a == 0


def cmp_ge(a: Affine) -> Cmp | bool:
    lo, hi = a.range
    if lo >= 0:
        return True
    if hi < 0:
        return False
    return Cmp(a, "ge")


def cmp_eq(a: Affine) -> Cmp | bool:
    if a.is_const:
        return a.const == 0
    if a.terms and a.terms[0][1] < 0:
        a = -a
    lo, hi = a.range
    if lo > 0 or hi < 0:
        return False
    return Cmp(a, "eq")


def conj(*parts) -> tuple | bool:
    """A conjunction of constraints; True / False when it folds."""
    out = []
    for p in parts:
        if p is False:
            return False
        if p is True:
            continue
        for c in (p if isinstance(p, tuple) else (p,)):
            if c not in out:
                out.append(c)
    return tuple(out) if out else True


def in_range(a: Affine, n: int):
    """0 <= a < n."""
    return conj(cmp_ge(a), cmp_ge(Affine.of(n - 1) - a))


def cond_subst(cond: tuple, m: dict):
    parts = []
    for c in cond:
        a = c.a.subst(m)
        parts.append(cmp_ge(a) if c.op == "ge" else cmp_eq(a))
    return conj(*parts)


def cond_ivars(cond: tuple) -> set:
    out = set()
    for c in cond:
        out |= c.a.ivars()
    return out


def div_mod_side(c: Cmp, v, kind):
    """For ``X == op(v + r, d)`` (op: IDiv or IMod, v nowhere else): (X, r, d)."""
    if c.op != "eq":
        return None
    atoms = [(a, k) for a, k in c.a.terms
             if a == v or (not isinstance(a, IVar) and v in a.a.ivars())]
    if len(atoms) != 1:
        return None
    (atom, k), = atoms
    if not isinstance(atom, kind) or abs(k) != 1 or atom.a.coeff(v) != 1:
        return None
    r = atom.a - Affine.of(v)
    x = (c.a - Affine.of(atom).scale(k)).scale(-k)
    if v in r.ivars() or v in x.ivars():
        return None
    return x, r, atom.d


def div_mod_point(cond: tuple, v):
    """The one value of ``v`` a conjunction allows through ``X == (v + r) div d`` and
    ``Y == (v + r) mod d`` (``v == d*X + Y - r``), or None."""
    divs = [t for t in (div_mod_side(c, v, IDiv) for c in cond) if t is not None]
    mods = [t for t in (div_mod_side(c, v, IMod) for c in cond) if t is not None]
    for x, r, d in divs:
        for y, r2, d2 in mods:
            if r == r2 and d == d2:
                return x.scale(d) + y - r
    return None


# ---------------------------------------------------------------------------------------------
# scalar expressions

class RExpr(_Hashed):
    pass


@dataclass(frozen=True, eq=True)
class Lit(RExpr):
    value: int


@dataclass(frozen=True, eq=True)
class Load(RExpr):
    array: str
    offset: Affine


@dataclass(frozen=True, eq=True)
class Local(RExpr):
    name: str


@dataclass(frozen=True, eq=True)
class Add(RExpr):
    a: RExpr
    b: RExpr


@dataclass(frozen=True, eq=True)
class Mul(RExpr):
    a: RExpr
    b: RExpr


@dataclass(frozen=True, eq=True)
class Neg(RExpr):
    a: RExpr


@dataclass(frozen=True, eq=True)
class Scale(RExpr):
    a: RExpr
    n: int


@dataclass(frozen=True, eq=True)
class Un(RExpr):
    fn: str          # one of ir.UNARY
    a: RExpr


@dataclass(frozen=True, eq=True)
class Max(RExpr):
    """The larger of ``a`` and ``b``: ``a - b <= 0 ? b : a`` (printed as a call of the helper
    ``fmax_``), so a tie gives ``b``, as the spec's Float max does."""
    a: RExpr
    b: RExpr


@dataclass(frozen=True, eq=True)
class Select(RExpr):
    cond: tuple
    a: RExpr


@dataclass(frozen=True, eq=True)
class Reduce(RExpr):
    vars: tuple           # IVar, outermost first
    body: RExpr
    origin: object = None  # the ir.Sum it came from (for messages); not compared

    def __eq__(self, other):
        return isinstance(other, Reduce) and self.vars == other.vars and self.body == other.body

    def __hash__(self):
        try:
            return self.__dict__["_h"]
        except KeyError:
            h = hash(("Reduce", self.vars, self.body))
            object.__setattr__(self, "_h", h)
            return h


ZERO = Lit(0)
ONE = Lit(1)

# Integer literals fold while they stay 64-bit integers of C (a model file's numbers are sums
# and products of ones: docs/model-format.md §3, "Numbers"); past that they stay apart, and the
# printer writes a literal past C's int as a real (extract/emit/printer.py: _lit).
LIT_LIMIT = 1 << 63


def _int(e: RExpr) -> int | None:
    """The value of an integer literal, or of its negation (``-1`` is ``Neg(Lit(1))``)."""
    if isinstance(e, Lit):
        return e.value
    if isinstance(e, Neg):
        v = _int(e.a)
        return None if v is None else -v
    return None


def _fold(a: RExpr, b: RExpr, op) -> RExpr | None:
    """``op`` of two integer literals as one, or None (not both literals, or too large)."""
    x, y = _int(a), _int(b)
    if x is None or y is None or abs(op(x, y)) >= LIT_LIMIT:
        return None
    v = op(x, y)
    return Lit(v) if v >= 0 else Neg(Lit(-v))


def affine_args(a: Affine) -> bool:
    """Whether an index expression holds an ``IArg`` (an argmax not yet placed)."""
    return any(isinstance(t, IArg) or (not isinstance(t, IVar) and affine_args(t.a))
               for t, _ in a.terms)


def has_arg(e: RExpr) -> bool:
    """Whether a scalar expression holds an ``IArg`` (outside the bodies of reductions, which
    are scheduled on their own)."""
    if isinstance(e, Load):
        return affine_args(e.offset)
    if isinstance(e, (Lit, Local, Reduce)):
        return False
    if isinstance(e, (Add, Mul, Max)):
        return has_arg(e.a) or has_arg(e.b)
    if isinstance(e, Select):
        return any(affine_args(k.a) for k in e.cond) or has_arg(e.a)
    return has_arg(e.a)


def add(a: RExpr, b: RExpr) -> RExpr:
    if a == ZERO:
        return b
    if b == ZERO:
        return a
    folded = _fold(a, b, lambda x, y: x + y)           # 1 + 1 is 2
    if folded is not None:
        return folded
    if isinstance(a, Select) and isinstance(b, Select) and a.cond == b.cond:
        return Select(a.cond, add(a.a, b.a))
    if isinstance(b, Neg):
        return Add(a, b)
    return Add(a, b)


def mul(a: RExpr, b: RExpr) -> RExpr:
    if a == ZERO or b == ZERO:
        return ZERO
    if a == ONE:
        return b
    if b == ONE:
        return a
    folded = _fold(a, b, lambda x, y: x * y)           # (1 + 1) * (1 + 1) is 4
    if folded is not None:
        return folded
    if isinstance(a, Select):
        return select(a.cond, mul(a.a, b))
    if isinstance(b, Select):
        return select(b.cond, mul(a, b.a))
    if isinstance(a, Neg) and isinstance(b, Neg):
        return mul(a.a, b.a)
    return Mul(a, b)


def neg(a: RExpr) -> RExpr:
    if a == ZERO:
        return ZERO
    if isinstance(a, Neg):
        return a.a
    if isinstance(a, Select):
        return select(a.cond, neg(a.a))
    return Neg(a)


def scale(a: RExpr, n: int) -> RExpr:
    if a == ZERO or n == 1:
        return a
    if isinstance(a, Select):
        return select(a.cond, scale(a.a, n))
    return Scale(a, n)


def un(fn: str, a: RExpr) -> RExpr:
    """``fn(a)``; nothing folds (``exp 0`` is 1, not 0), but a guarded argument of a function
    that maps 0 to 0 (``relu``, ``step``) moves the guard outwards like ``neg`` does. ``sqrt 0``
    is 0 as well but does not fold: over the validator's field (extract/check/field.py) sqrt is a
    random function, whose value at 0 is not 0."""
    if fn in ("relu", "step"):
        if a == ZERO:
            return ZERO
        if isinstance(a, Select):
            return select(a.cond, un(fn, a.a))
    return Un(fn, a)


def max_(a: RExpr, b: RExpr) -> RExpr:
    """``max(a, b)``; only ``max(0, 0)`` folds (a guard cannot move out: ``max(0, b)`` is not
    0 where b < 0)."""
    if a == ZERO and b == ZERO:
        return ZERO
    return Max(a, b)


def select(cond, a: RExpr) -> RExpr:
    if cond is False or a == ZERO:
        return ZERO
    if cond is True:
        return a
    if isinstance(a, Select):
        c = conj(cond, a.cond)
        return ZERO if c is False else select(c, a.a)
    return Select(cond, a)


def reduce(vars: tuple, body: RExpr, origin=None) -> RExpr:
    """Σ over ``vars`` of ``body``; a point sum ``Σ_t [t == e] x`` becomes ``[0<=e<n] x(e)``."""
    vars = tuple(v for v in vars if v.extent != 1)
    if any(v.extent == 0 for v in vars) or body == ZERO:
        return ZERO
    if not vars:
        return body
    if isinstance(body, Select):
        for c in body.cond:
            if c.op != "eq":
                continue
            for v in vars:
                k = c.a.coeff(v)
                if abs(k) != 1:
                    continue
                rest = c.a - Affine.of(v).scale(k)       # k*v + rest == 0
                if v in rest.ivars():
                    continue
                value = rest.scale(-k)                    # v == -rest/k, k = ±1
                others = tuple(x for x in body.cond if x is not c)
                m = {v: value}
                guard = conj(in_range(value, v.extent), cond_subst(others, m) if others else True)
                inner = subst(body.a, m)
                remaining = tuple(x for x in vars if x != v)
                if guard is False:
                    return ZERO
                # a constraint on a remaining sum variable stays inside that sum
                rest = set(remaining)
                parts = () if guard is True else guard
                inside = tuple(k for k in parts if k.a.ivars() & rest) or True
                outside = tuple(k for k in parts if not k.a.ivars() & rest) or True
                return select(outside, reduce(remaining, select(inside, inner), origin))
    if isinstance(body, Reduce):
        fixed = _fixed_inside(body.body, vars)
        # Σ_v Σ_u [v == e(u)] x: the sums commute (their extents are constants), so v can be
        # taken as a point of each u rather than looped over for every u; that pays unless u
        # is itself a point of v (``v == u div d``, ``u mod d == 0``: tighten_bounds makes it
        # one) over more positions than v
        if fixed and not (_size(body.vars) > _size(fixed) and isinstance(body.body, Select)
                          and all(div_mod_point(body.body.cond, u) is not None
                                  for u in body.vars)):
            return reduce(body.vars, reduce(vars, body.body, origin), body.origin)
    return Reduce(vars, body, origin)


def _size(vars) -> int:
    n = 1
    for v in vars:
        n *= v.extent
    return n


def _fixed_inside(e: RExpr, vars: tuple) -> tuple:
    """The variables of ``vars`` that sums around a guarded term ``e`` fix by an equality
    ``±v + r == 0`` (v not in r)."""
    while isinstance(e, Reduce):
        e = e.body
    if not isinstance(e, Select):
        return ()
    out = []
    for v in vars:
        for c in e.cond:
            k = c.a.coeff(v)
            if c.op == "eq" and abs(k) == 1 and v not in (c.a - Affine.of(v).scale(k)).ivars():
                out.append(v)
                break
    return tuple(out)


def subst(e: RExpr, m: dict) -> RExpr:
    """Replace loop variables (IVar -> Affine) in a scalar expression."""
    if isinstance(e, (Lit, Local)):
        return e
    if isinstance(e, Load):
        return Load(e.array, e.offset.subst(m))
    if isinstance(e, Add):
        return add(subst(e.a, m), subst(e.b, m))
    if isinstance(e, Mul):
        return mul(subst(e.a, m), subst(e.b, m))
    if isinstance(e, Neg):
        return neg(subst(e.a, m))
    if isinstance(e, Scale):
        return scale(subst(e.a, m), e.n)
    if isinstance(e, Un):
        return un(e.fn, subst(e.a, m))
    if isinstance(e, Max):
        return max_(subst(e.a, m), subst(e.b, m))
    if isinstance(e, Select):
        c = cond_subst(e.cond, m)
        return select(c, subst(e.a, m))
    if isinstance(e, Reduce):
        inner = {k: v for k, v in m.items() if k not in e.vars}
        return reduce(e.vars, subst(e.body, inner), e.origin)
    raise TypeError(type(e).__name__)


def contains_reduce(e: RExpr) -> bool:
    if isinstance(e, Reduce):
        return True
    if isinstance(e, (Lit, Local, Load)):
        return False
    if isinstance(e, (Add, Mul, Max)):
        return contains_reduce(e.a) or contains_reduce(e.b)
    return contains_reduce(e.a)


def free_ivars(e: RExpr) -> set:
    if isinstance(e, (Lit, Local)):
        return set()
    if isinstance(e, Load):
        return e.offset.ivars()
    if isinstance(e, (Add, Mul, Max)):
        return free_ivars(e.a) | free_ivars(e.b)
    if isinstance(e, Select):
        return cond_ivars(e.cond) | free_ivars(e.a)
    if isinstance(e, Reduce):
        return free_ivars(e.body) - set(e.vars)
    return free_ivars(e.a)


def free_locals(e: RExpr) -> set:
    if isinstance(e, Local):
        return {e.name}
    if isinstance(e, (Lit, Load)):
        return set()
    if isinstance(e, (Add, Mul, Max)):
        return free_locals(e.a) | free_locals(e.b)
    if isinstance(e, Reduce):
        return free_locals(e.body)
    return free_locals(e.a)


def load_nodes(e: RExpr) -> list:
    """The ``Load`` nodes of an expression, left to right."""
    if isinstance(e, Load):
        return [e]
    if isinstance(e, (Lit, Local)):
        return []
    if isinstance(e, (Add, Mul, Max)):
        return load_nodes(e.a) + load_nodes(e.b)
    if isinstance(e, Reduce):
        return load_nodes(e.body)
    return load_nodes(e.a)


def loads(e: RExpr) -> set:
    """Names of the arrays an expression reads."""
    if isinstance(e, Load):
        return {e.array}
    if isinstance(e, (Lit, Local)):
        return set()
    if isinstance(e, (Add, Mul, Max)):
        return loads(e.a) | loads(e.b)
    if isinstance(e, Reduce):
        return loads(e.body)
    return loads(e.a)


# ---------------------------------------------------------------------------------------------
# statements

class Stmt(_Hashed):
    pass


@dataclass(frozen=True, eq=True)
class For(Stmt):
    """``for var in [max(0, *lo), min(extent, *hi))``."""
    var: IVar
    body: tuple
    parallel: bool = False   # iterations write disjoint elements (CUDA maps them to threads)
    lo: tuple = ()           # extra lower bounds (Affine in outer variables)
    hi: tuple = ()           # extra upper bounds (exclusive)


@dataclass(frozen=True, eq=True)
class Store(Stmt):
    array: str
    offset: Affine
    op: str          # "=" or "+="
    value: RExpr


@dataclass(frozen=True, eq=True)
class Decl(Stmt):
    name: str
    value: RExpr


@dataclass(frozen=True, eq=True)
class Acc(Stmt):
    name: str
    value: RExpr


@dataclass(frozen=True, eq=True)
class Assign(Stmt):
    name: str
    value: RExpr


@dataclass(frozen=True, eq=True)
class If(Stmt):
    cond: tuple
    body: tuple


@dataclass(frozen=True, eq=True)
class Comment(Stmt):
    text: str


@dataclass(frozen=True, eq=True)
class Buffer(Stmt):
    """``real name[size];``: a local array, read with ``Load`` and written with ``Store``;
    ``shared``: in a lane kernel, one for every sample (no lane index: extract/passes/lanes.py)."""
    name: str
    size: int
    shared: bool = False


@dataclass(frozen=True, eq=True)
class ArgDecl(Stmt):
    """``int name = 0;``: the position an argmax loop computes (dump version 5); ``lanes``
    (extract/passes/lanes.py): one position per sample lane, a vector of ints (``vindex``), which
    the ``ArgStep`` in a loop over the lanes updates lane by lane and conditions compare with."""
    name: str
    lanes: int = 0


@dataclass(frozen=True, eq=True)
class ArgStep(Stmt):
    """One step of an argmax loop (dump version 5): ``if (at == 0 || top < value) { top =
    value; index = at; }``, ``top`` a scalar local, ``at`` the flat position of the loop
    variables. At the first position it takes the value; after that a strictly larger one
    moves the position (ties keep the first, a NaN neither replaces nor is replaced)."""
    index: str
    top: str
    at: Affine
    value: RExpr


@dataclass(frozen=True, eq=True)
class Divided(Stmt):
    """A loop whose iterations the threads of a shared group divide among them
    (extract/passes/divide.py): thread ``part`` of ``nparts`` runs iterations
    ``[extent * part / nparts, extent * (part + 1) / nparts)`` of ``loop``."""
    loop: For


@dataclass(frozen=True, eq=True)
class OnePart(Stmt):
    """Statements that only thread 0 of a shared group runs (extract/passes/divide.py)."""
    body: tuple


@dataclass(frozen=True, eq=True)
class Barrier(Stmt):
    """Every thread of a shared group waits here until all have arrived."""


def subst_stmts(stmts, m: dict) -> tuple:
    """Replace loop variables (IVar -> Affine) in statements; returns the new statements
    (an ``If`` whose condition folds to true is inlined, one that folds to false dropped)."""
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.append(For(s.var, subst_stmts(s.body, m), s.parallel,
                           tuple(a.subst(m) for a in s.lo), tuple(a.subst(m) for a in s.hi)))
        elif isinstance(s, Store):
            out.append(Store(s.array, s.offset.subst(m), s.op, subst(s.value, m)))
        elif isinstance(s, (Decl, Acc, Assign)):
            out.append(type(s)(s.name, subst(s.value, m)))
        elif isinstance(s, ArgStep):
            out.append(ArgStep(s.index, s.top, s.at.subst(m), subst(s.value, m)))
        elif isinstance(s, If):
            cond = cond_subst(s.cond, m)
            if cond is True:
                out.extend(subst_stmts(s.body, m))
            elif cond is not False:
                out.append(If(cond, subst_stmts(s.body, m)))
        else:
            out.append(s)
    return tuple(out)


def names_in(stmts) -> set:
    """The names statements bind: loop variables, scalar locals and local buffers."""
    out = set()
    for s in stmts:
        if isinstance(s, For):
            out.add(s.var.name)
            out |= names_in(s.body)
        elif isinstance(s, If):
            out |= names_in(s.body)
        elif isinstance(s, (Decl, Buffer, ArgDecl)):
            out.add(s.name)
    return out


def has_argmax(stmts) -> bool:
    """Whether statements compute an argmax (``ArgDecl``; dump version 5)."""
    return any(isinstance(s, ArgDecl) or (isinstance(s, (For, If)) and has_argmax(s.body))
               for s in stmts)


def stmt_loads(stmts) -> set:
    out = set()
    for s in stmts:
        if isinstance(s, (For, If)):
            out |= stmt_loads(s.body)
        elif isinstance(s, (Store, Decl, Acc, Assign, ArgStep)):
            out |= loads(s.value)
    return out


def _install_cached_hash() -> None:
    # @dataclass(frozen=True, eq=True) generates a recursive __hash__ per class; replace it by
    # the cached one (Reduce defines its own, which ignores ``origin``).
    stack = [_Hashed]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls not in (Reduce, IArg, _Hashed):
            cls.__hash__ = _Hashed.__hash__


_install_cached_hash()

"""The one printer of the loop IR (extract.ir.code) for C and CUDA.

The two languages differ only by the strings in ``Language`` (qualifiers, ``restrict``
spelling, and how a parallel loop is written: a ``for`` loop in C, one thread index per element
in CUDA). The elementwise functions print the same in both: ``exp``, ``log``, ``sqrt`` and
``erf`` as libm's function for the real type (``MATHS``: ``expf``/``logf``/``sqrtf``/``erff``
for float), ``recip`` as ``1 / x``, and ``logistic``, ``relu``, ``step``, ``derf`` (erf's
derivative, ``2/√π · exp(−x²)``) and ``Max`` (``fmax_``) as calls of the small helpers the
templates define.
Expressions are printed with the fewest parentheses that keep C's parse (and so the evaluation
order) equal to the tree: ``a + (b + c)`` keeps its parentheses, ``(a + b) + c`` prints as
``a + b + c``.

Indices are C's ``int`` wherever they fit it, and 64-bit (``ptrdiff_t``) only where they may
not (``INT_MAX``, from the ranges of the loop IR): an index expression that may pass ``INT_MAX``
(its value, or a partial sum of its terms in the printed order) is computed in ``ptrdiff_t``,
its first term and every term that alone may pass it cast (``(ptrdiff_t)i * 784 + j``: an
element of a parameter of more than 2³¹ − 1 elements, or of a lane buffer of more than 2³¹ − 1
/ 16 elements a sample); a loop whose extent passes it (one dimension of more than 2³¹ − 1)
counts in ``ptrdiff_t``, and is refused (``ExtractError``) if it also needs clipped bounds, as
is a max-reduction over more positions (its position is an int). Every model whose indices
stay below ``INT_MAX`` prints as it did before (tests lower ``INT_MAX`` to run the 64-bit path
on small models).

Before (loop IR)::

    For(j, 4, [Store(y, j, "=", Add(Load(a, j), Neg(Load(b, j))))])

After (C)::

    for (int j = 0; j < 4; j++) {
        y[j] = a[j] - b[j];
    }
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import code as c
from ..passes.lower import ExtractError


@dataclass(frozen=True)
class Language:
    name: str
    restrict: str
    kernel: str               # qualifiers of a per-array function / kernel
    inline: str               # qualifiers of the helper functions
    threads: bool             # parallel loops become thread indices
    thread_index: str = ""
    sample_index: str = ""
    atomic_add: str = ""      # not needed: reductions have a fixed order and no atomics


C = Language("c", "restrict", "static void", "static inline", False)
CUDA = Language("cuda", "__restrict__", "__global__ void", "static __device__ __forceinline__",
                True, "blockIdx.x * blockDim.x + threadIdx.x", "blockIdx.y", "atomicAdd")
LANGUAGES = {"c": C, "cuda": CUDA}


# the C function of each elementwise function (extract.ir.ir.UNARY), by the real type; logistic,
# relu and step are helpers of the generated file (templates), recip prints as a division;
# sqrt is correctly rounded, and under -fno-math-errno (extract/emit/build.py) one instruction
MATHS = {
    "float": {"logistic": "logistic", "exp": "expf", "log": "logf", "sqrt": "sqrtf",
              "relu": "relu", "step": "step", "erf": "erff", "derf": "derf"},
    "double": {"logistic": "logistic", "exp": "exp", "log": "log", "sqrt": "sqrt",
               "relu": "relu", "step": "step", "erf": "erf", "derf": "derf"},
}


# ---------------------------------------------------------------------------------------------
# index expressions

# the largest value an int index may take; past it, ptrdiff_t (module docstring). A module
# attribute, read at each use, so that tests can lower it.
INT_MAX = 2 ** 31 - 1
WIDE = "ptrdiff_t"


def _far(lo: int, hi: int) -> bool:
    """Whether a value in [lo, hi] may not fit C's int (as bounded by ``INT_MAX``)."""
    return hi > INT_MAX or lo < -INT_MAX - 1


def index_type(largest: int) -> str:
    """The C type of an index whose values are at most ``largest``: ``int`` or ``ptrdiff_t``."""
    return WIDE if largest > INT_MAX else "int"


def _casts(terms, const: int) -> set:
    """The positions (in ``terms``, in printed order) to cast to ptrdiff_t: none where every
    term and every partial sum fits an int; else the first and each that alone may not."""
    lo = hi = 0
    wide, far = False, set()
    for n, (atom, k) in enumerate(terms):
        alo, ahi = atom.range
        tlo, thi = (k * alo, k * ahi) if k > 0 else (k * ahi, k * alo)
        if _far(tlo, thi):
            far.add(n)
        lo, hi = lo + tlo, hi + thi
        wide = wide or _far(lo, hi)
    wide = wide or bool(far) or (bool(terms) and _far(lo + const, hi + const))
    return far | {0} if wide and terms else set()


def _term(atom, k: int, cast: bool = False) -> str:
    text = _atom(atom)
    if cast:
        text = f"({WIDE}){text}"
    if abs(k) == 1:
        return text
    return f"{text} * {abs(k)}"


def _atom(a) -> str:
    if isinstance(a, c.IVar):
        return a.name
    op = "/" if isinstance(a, c.IDiv) else "%"
    inner = affine(a.a)
    if len(a.a.terms) + (a.a.const != 0) > 1:
        inner = f"({inner})"
    return f"{inner} {op} {a.d}"


def affine(a: c.Affine) -> str:
    """Terms with positive coefficients first, larger strides first: ``t * 4 + j - i``; in
    ptrdiff_t where an int may not hold it (``INT_MAX``)."""
    parts = []
    terms = sorted(a.terms, key=lambda t: (t[1] < 0, -abs(t[1]), c._atom_key(t[0])))
    casts = _casts(terms, a.const)
    for n, (atom, k) in enumerate(terms):
        if not parts:
            parts.append(("-" if k < 0 else "") + _term(atom, k, n in casts))
        else:
            parts.append((" - " if k < 0 else " + ") + _term(atom, k, n in casts))
    if a.const or not parts:
        if not parts:
            parts.append(str(a.const))
        else:
            parts.append((" - " if a.const < 0 else " + ") + str(abs(a.const)))
    return "".join(parts)


def is_wide(a: c.Affine) -> bool:
    """Whether ``affine(a)`` prints in ptrdiff_t (an int may not hold it)."""
    terms = sorted(a.terms, key=lambda t: (t[1] < 0, -abs(t[1]), c._atom_key(t[0])))
    return bool(_casts(terms, a.const)) or _far(a.const, a.const)


def _side(terms, const: int) -> str:
    return affine(c.Affine(tuple(terms), const))


def constraint(k: c.Cmp) -> str:
    pos = [(a, n) for a, n in k.a.terms if n > 0]
    negs = [(a, -n) for a, n in k.a.terms if n < 0]
    const = k.a.const
    if k.op == "eq":
        if not pos:
            pos, negs, const = negs, pos, -const
        # pos + const == negs
        if const >= 0 or not negs:
            return f"{_side(pos, 0)} == {_side(negs, -const)}"
        return f"{_side(pos, const)} == {_side(negs, 0)}"
    # pos - negs + const >= 0
    if const > 0 and negs:
        return f"{_side(negs, 0)} < {_side(pos, const + 1)}"
    if not pos:
        return f"{_side(negs, 0)} <= {const}"
    return f"{_side(pos, 0)} >= {_side(negs, -const)}"


def condition(cond: tuple) -> str:
    return " && ".join(constraint(k) for k in cond)


# ---------------------------------------------------------------------------------------------
# scalar expressions

def _prec(e) -> int:
    if isinstance(e, c.Select):
        return 0
    if isinstance(e, c.Lit) and not _integral(e):     # (real)N, a cast
        return 3
    if isinstance(e, c.Add):
        return 1
    if isinstance(e, (c.Mul, c.Scale)) or (isinstance(e, c.Un) and e.fn == "recip"):
        return 2
    if isinstance(e, c.Neg):
        return 3
    return 4


def expr(e, need: int = 0, real: str = "float") -> str:
    """A scalar expression, parenthesised if it binds less tightly than ``need``; ``real`` is
    the C type of the reals (it names the maths functions)."""
    text = _expr(e, real)
    return f"({text})" if _prec(e) < need else text


INT_LIMIT = 1 << 31


def _lit(value: int) -> str:
    """An integer literal: as it is while it is a C int, else cast to the real type (a model's
    number, up to 2^53, or a product of two: no int arithmetic that could overflow)."""
    return str(value) if -INT_LIMIT < value < INT_LIMIT else f"(real){value}"


def _integral(e) -> bool:
    """Whether C would type the expression as an int (literals only)."""
    if isinstance(e, c.Lit):
        return -INT_LIMIT < e.value < INT_LIMIT
    if isinstance(e, (c.Add, c.Mul)):
        return _integral(e.a) and _integral(e.b)
    if isinstance(e, c.Neg):
        return _integral(e.a)
    return False


def _expr(e, real: str) -> str:
    if isinstance(e, c.Lit):
        return _lit(e.value)
    if isinstance(e, c.Load):
        return f"{e.array}[{affine(e.offset)}]"
    if isinstance(e, c.Local):
        return e.name
    if isinstance(e, c.Add):
        if isinstance(e.b, c.Neg):
            return f"{expr(e.a, 1, real)} - {expr(e.b.a, 2, real)}"
        return f"{expr(e.a, 1, real)} + {expr(e.b, 2, real)}"
    if isinstance(e, c.Mul):
        return f"{expr(e.a, 2, real)} * {expr(e.b, 3, real)}"
    if isinstance(e, c.Scale):
        if _integral(e.a):   # C would divide integers: 1 / 2 == 0
            return f"(real){expr(e.a, 4, real)} / {e.n}"
        return f"{expr(e.a, 2, real)} / {e.n}"
    if isinstance(e, c.Neg):
        return f"-{expr(e.a, 3, real)}"
    if isinstance(e, c.Un):
        if e.fn == "recip":
            one = "(real)1" if _integral(e.a) else "1"
            return f"{one} / {expr(e.a, 3, real)}"
        return f"{MATHS[real][e.fn]}({expr(e.a, 0, real)})"
    if isinstance(e, c.Max):
        return f"fmax_({expr(e.a, 0, real)}, {expr(e.b, 0, real)})"
    if isinstance(e, c.Select):
        return f"{condition(e.cond)} ? {expr(e.a, 1, real)} : 0"
    raise TypeError(f"cannot print {type(e).__name__}")


# ---------------------------------------------------------------------------------------------
# lane loops as vector statements (the batch kernels of the C file, extract/passes/lanes.py)

class _Vector:
    """Prints the body of a loop over the sample lanes (``lane``, ``width`` samples) as one
    statement on ``vreal`` values (GCC/Clang vector extension, ``width`` reals): a read with
    the lane index is ``vload(&a[base])``, or ``buf[k]`` for a local ``vreal`` buffer; a read
    without it (a parameter) is a scalar the vector operators broadcast. Returns None where
    the value needs a scalar function (``log``; ``logistic`` and ``exp`` on doubles): that loop
    stays a loop over lanes, which the compiler vectorises (libmvec). ``relu``, ``step`` and
    ``max`` print as the vector helpers ``vrelu``, ``vstep`` and ``vfmax_``; ``sqrt`` as
    ``vsqrt`` (one ``vsqrtps``/``vsqrtpd``); on floats (``real``), ``logistic`` and ``exp`` as
    ``vlogistic`` and ``vexp``, the template's inline exp (no call per vector).

    An argmax across the lanes (extract/passes/lanes.py): its position, declared by an ``ArgDecl``
    with ``lanes``, is a ``vindex`` (``args``); a step, ``vargstep(top, arg, value, at)``; a
    condition that reads a position, a mask per lane, ``vwhere(mask, value)`` (and the other
    constraints of the condition, the same in every lane, a ``?:`` outside it). In a loop over
    the lanes kept as a loop (a condition beside a scalar call), the position of lane ``l``
    is ``arg[l]``.

    ``p``: the prefix of the vector type and helpers, ``v`` for the batch kernels' width and
    ``h`` for the kernels of half that width (``hreal``, ``hload``, ...: the C file has both)."""

    def __init__(self, lane: c.IVar, width: int, buffers: set, p: str = "v",
                 real: str | None = None):
        self.lane, self.width, self.buffers, self.p, self.real = lane, width, buffers, p, real
        self.args: set = set()      # argmax positions, one per lane (``vindex``)

    def on_lanes(self, k: c.Cmp) -> bool:
        """Whether a constraint reads an argmax position, different in every lane."""
        return any(v.name in self.args for v in k.a.ivars())

    def lane_cond(self, cond: tuple) -> tuple:
        """``cond`` in one lane: each position ``arg`` read as ``arg[l]``."""
        m = {v: c.Affine.of(c.IVar(f"{v.name}[{self.lane.name}]", v.extent, v.rank))
             for k in cond for v in k.a.ivars() if v.name in self.args}
        return tuple(c.Cmp(k.a.subst(m), k.op) for k in cond)

    def base(self, off: c.Affine) -> c.Affine | None:
        if off.coeff(self.lane) != 1 or self.lane in (off - c.Affine.of(self.lane)).ivars():
            return None
        return off - c.Affine.of(self.lane)

    def ref(self, array: str, base: c.Affine) -> str:
        if array in self.buffers:
            k = c.Affine(tuple((a, n // self.width) for a, n in base.terms),
                         base.const // self.width)
            return f"{array}[{affine(k)}]"
        return f"{self.p}load(&{array}[{affine(base)}])"

    def expr(self, e):
        """(text, precedence, is a vector) or None."""
        if isinstance(e, c.Lit):
            return _lit(e.value), 4 if _integral(e) else 3, False
        if isinstance(e, c.Load):
            b = self.base(e.offset)
            if b is None:
                if self.lane in e.offset.ivars():
                    return None
                return f"{e.array}[{affine(e.offset)}]", 4, False
            return self.ref(e.array, b), 4, True
        if isinstance(e, (c.Add, c.Mul)):
            neg = isinstance(e, c.Add) and isinstance(e.b, c.Neg)
            a, b = self.expr(e.a), self.expr(e.b.a if neg else e.b)
            if a is None or b is None:
                return None
            p = 1 if isinstance(e, c.Add) else 2
            op = " - " if neg else " + " if p == 1 else " * "
            return (_par(a, p) + op + _par(b, p + 1)), p, a[2] or b[2]
        if isinstance(e, c.Scale):
            a = self.expr(e.a)
            if a is None:
                return None
            if not a[2] and _integral(e.a):
                return f"(real){_par(a, 4)} / {e.n}", 2, False
            return f"{_par(a, 2)} / {e.n}", 2, a[2]
        if isinstance(e, c.Neg):
            a = self.expr(e.a)
            return None if a is None else (f"-{_par(a, 3)}", 3, a[2])
        if isinstance(e, c.Select):
            a = self.expr(e.a)
            if a is None:
                return None
            lanes = tuple(k for k in e.cond if self.on_lanes(k))
            if lanes:
                # a condition on argmax positions: a mask per lane (vindex comparisons), the
                # template's vwhere keeping the value where it is set and 0 elsewhere
                x = a[0] if a[2] else f"{self.p}splat({a[0]})"
                mask = " & ".join(f"({constraint(k)})" for k in lanes)
                text = f"{self.p}where({mask}, {x})"
                rest = tuple(k for k in e.cond if not self.on_lanes(k))
                if not rest:
                    return text, 4, True
                return f"{condition(rest)} ? {text} : ({self.p}real){{0}}", 0, True
            zero = f"({self.p}real){{0}}" if a[2] else "0"
            return f"{condition(e.cond)} ? {_par(a, 1)} : {zero}", 0, a[2]
        if isinstance(e, c.Un) and e.fn == "recip":
            a = self.expr(e.a)
            if a is None:
                return None
            one = "(real)1" if not a[2] and _integral(e.a) else "1"
            return f"{one} / {_par(a, 3)}", 2, a[2]
        if isinstance(e, c.Un) and e.fn in ("relu", "step") or isinstance(e, c.Max):
            # comparisons: vrelu / vstep / vfmax_ (the template's mask-and-select helpers,
            # the same comparisons as the scalar ones); on scalars, the scalar helper
            args = [self.expr(x) for x in ((e.a,) if isinstance(e, c.Un) else (e.a, e.b))]
            if any(a is None for a in args):
                return None
            name = e.fn if isinstance(e, c.Un) else "fmax_"
            if not any(a[2] for a in args):
                return f"{name}({', '.join(a[0] for a in args)})", 4, False
            vs = [a[0] if a[2] else f"{self.p}splat({a[0]})" for a in args]
            return f"{self.p}{name}({', '.join(vs)})", 4, True
        if isinstance(e, c.Un) and (e.fn == "sqrt" or e.fn in ("logistic", "exp")
                                    and self.real == "float"):
            # vsqrt: sqrt lane by lane, a loop the compiler makes one vector instruction;
            # vexp, vlogistic: the template's inline exp; on scalars, the scalar function
            a = self.expr(e.a)
            if a is None:
                return None
            if not a[2]:
                return f"{MATHS[self.real or 'float'][e.fn]}({a[0]})", 4, False
            return f"{self.p}{e.fn}({a[0]})", 4, True
        return None                      # the other functions: scalar calls

    def store(self, s: c.Store) -> str | None:
        b = self.base(s.offset)
        v = self.expr(s.value)
        if b is None or v is None:
            return None
        value, prec = (v[0], v[1]) if v[2] else (f"{self.p}splat({v[0]})", 4)
        if s.array in self.buffers:
            return f"{self.ref(s.array, b)} {s.op} {value};"
        target = f"&{s.array}[{affine(b)}]"
        p = self.p
        if s.op == "+=":
            return f"{p}store({target}, {p}load({target}) + {_par((value, prec, True), 2)});"
        return f"{p}store({target}, {value});"

    def argstep(self, s: c.ArgStep) -> str | None:
        """One step of an argmax loop in every lane at once: the template's ``vargstep`` (a
        vector compare, then a select of the value and of the position by its mask)."""
        v = self.expr(s.value)
        if v is None:
            return None
        value = v[0] if v[2] else f"{self.p}splat({v[0]})"
        return (f"{self.p}argstep({self.ref(s.top, c.Affine())}, {s.index}, {value}, "
                f"{affine(s.at)});")

    def scalar(self, s):
        """A loop over lanes kept as a loop: a ``vreal`` buffer is read and written one lane at
        a time, ``buf[k][l]`` (vector subscript)."""
        def ref(array, off):
            b = self.base(off)
            k = self.ref(array, b)
            return k, c.Affine.of(self.lane)

        def walk(e):
            if isinstance(e, c.Load):
                if e.array in self.buffers:
                    return c.Load(*ref(e.array, e.offset))
                return e
            if isinstance(e, (c.Lit, c.Local)):
                return e
            if isinstance(e, (c.Add, c.Mul, c.Max)):
                return type(e)(walk(e.a), walk(e.b))
            if isinstance(e, c.Scale):
                return c.Scale(walk(e.a), e.n)
            if isinstance(e, c.Select):
                return c.Select(self.lane_cond(e.cond), walk(e.a))
            if isinstance(e, c.Un):
                return c.Un(e.fn, walk(e.a))
            return type(e)(walk(e.a))

        def stmt(x):
            if isinstance(x, c.Store):
                if x.array in self.buffers:
                    return c.Store(*ref(x.array, x.offset), x.op, walk(x.value))
                return c.Store(x.array, x.offset, x.op, walk(x.value))
            return x
        return c.For(s.var, tuple(stmt(x) for x in s.body), s.parallel, s.lo, s.hi)


def _par(x, need: int) -> str:
    text, prec, _ = x
    return f"({text})" if prec < need else text


# ---------------------------------------------------------------------------------------------
# statements

class _Printer:
    def __init__(self, lang: Language, indent: int, lanes=None, real: str = "float"):
        self.lang = lang
        self.real = real
        self.lines: list[str] = []
        self.depth = indent
        self.strides: dict = {}
        self.vector = _Vector(lanes[0], lanes[1], set(), *lanes[2:], real=real) \
            if lanes else None

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def braced(self, head: str, body) -> None:
        """``head {``, the body one level in, ``}``."""
        self.line(f"{head} {{")
        self.depth += 1
        self.block(body)
        self.depth -= 1
        self.line("}")

    def stmt(self, s) -> None:
        if self.vector and isinstance(s, c.For) and s.var == self.vector.lane and \
                any(isinstance(x, c.For) for x in s.body):
            # a nest run once per sample (extract/passes/lanes.py, per_sample): a plain loop
            self.braced(f"for (int {s.var.name} = 0; {s.var.name} < {s.var.extent}; "
                        f"{s.var.name}++)", s.body)
            return
        if self.vector and isinstance(s, c.For) and s.var == self.vector.lane:
            if len(s.body) == 1 and isinstance(s.body[0], c.Store):
                text = self.vector.store(s.body[0])
                if text is not None:
                    self.line(text)
                    return
            if len(s.body) == 1 and isinstance(s.body[0], c.ArgStep):
                # its value is a load or a local (lower.py), so always a vector
                text = self.vector.argstep(s.body[0])
                if text is None:
                    raise TypeError("an argmax step whose value has no vector form")
                self.line(text)
                return
            s = self.vector.scalar(s)
            # the lanes are independent samples: one vector per statement (the template's
            # LANE_LOOP, `omp simd` under GCC; without it GCC mixed 16- and 8-wide libmvec
            # calls: the CNN's logistic c1, a loop over lanes on Zen 5 before vlogistic, took
            # 1.22 instead of 0.74 us per image, bench/PROFILE.md)
            self.line("LANE_LOOP")
        if self.vector and isinstance(s, c.ArgDecl) and s.lanes:
            self.vector.args.add(s.name)
            self.line(f"{self.vector.p}index {s.name} = ({self.vector.p}index){{0}};")
            return
        if self.vector and isinstance(s, c.Buffer) and not s.shared:
            self.vector.buffers.add(s.name)
            self.line(f"{self.vector.p}real {s.name}[{s.size // self.vector.width}];")
            return
        if isinstance(s, c.For):
            v = s.var.name
            if s.parallel and self.lang.threads:
                stride = self.strides[s.var]
                text = f"idx / {stride}" if stride != 1 else "idx"
                if stride * s.var.extent != self.total:
                    text += f" % {s.var.extent}"
                self.line(f"const {index_type(s.var.extent)} {v} = {text};")
                self.block(s.body)
                return
            _check_bounds(s)
            t = index_type(s.var.extent)
            self.braced(f"for ({t} {v} = {_lower(s)}; {v} < {_upper(s)}; {v}++)", s.body)
        elif isinstance(s, c.Store):
            self.line(f"{s.array}[{affine(s.offset)}] {s.op} {expr(s.value, 0, self.real)};")
        elif isinstance(s, c.Decl):
            self.line(f"real {s.name} = {expr(s.value, 0, self.real)};")
        elif isinstance(s, c.Acc):
            self.line(f"{s.name} += {expr(s.value, 0, self.real)};")
        elif isinstance(s, c.Assign):
            self.line(f"{s.name} = {expr(s.value, 0, self.real)};")
        elif isinstance(s, c.If):
            self.braced(f"if ({condition(s.cond)})", s.body)
        elif isinstance(s, c.ArgDecl):
            self.line(f"int {s.name} = 0;")
        elif isinstance(s, c.ArgStep):
            if is_wide(s.at):
                # its position is an int (ArgDecl; vindex in the lane kernels)
                raise ExtractError(f"a max-reduction over more than {INT_MAX:,} positions "
                                   f"(position {affine(s.at)}): its position is a C int")
            # the first position takes the value; a strictly larger one moves it (dump §4)
            first = condition((c.Cmp(s.at, "eq"),))
            self.braced(f"if ({first} || {s.top} < {expr(s.value, 2, self.real)})",
                        (c.Assign(s.top, s.value), _SetIndex(s.index, s.at)))
        elif isinstance(s, _SetIndex):
            self.line(f"{s.name} = {affine(s.at)};")
        elif isinstance(s, c.Divided):
            # thread `part` of `nparts` runs its share of the iterations (extract/passes/divide.py)
            # (a literal n past int's range is a long: the products are then 64-bit)
            f, n = s.loop, s.loop.var.extent
            v = f.var.name
            _check_bounds(f)
            lo = _fold("imax", [f"part * {n} / nparts", *(affine(a) for a in f.lo)])
            hi = _fold("imin", [f"(part + 1) * {n} / nparts", *(affine(a) for a in f.hi)])
            self.braced(f"for ({index_type(n)} {v} = {lo}; {v} < {hi}; {v}++)", f.body)
        elif isinstance(s, c.OnePart):
            self.braced("if (part == 0)", s.body)
        elif isinstance(s, c.Barrier):
            self.line("barrier(nparts);")
        elif isinstance(s, c.Comment):
            self.line(f"/* {s.text} */")
        elif isinstance(s, c.Buffer):
            self.line(f"real {s.name}[{s.size}];")
        else:
            raise TypeError(f"cannot print {type(s).__name__}")


@dataclass(frozen=True)
class _SetIndex:
    """``name = at;`` (the printer's own: the position an ``ArgStep`` moves to)."""
    name: str
    at: c.Affine


def _check_bounds(s: c.For) -> None:
    """A loop past int's range (its extent or a bound) with clipped bounds is refused: the
    template's ``imin``/``imax`` take ints (module docstring)."""
    if (s.lo or s.hi) and (index_type(s.var.extent) == WIDE or
                           any(is_wide(a) for a in (*s.lo, *s.hi))):
        raise ExtractError(f"a loop of {s.var.extent:,} iterations with clipped bounds (a "
                           f"padded window along one dimension past C's int): not supported")


def _lower(s: c.For) -> str:
    bounds = [affine(a) for a in s.lo]
    if not bounds or any(a.range[0] < 0 for a in s.lo):
        bounds.insert(0, "0")
    return _fold("imax", bounds)


def _upper(s: c.For) -> str:
    n = s.var.extent
    bounds = [affine(a) for a in s.hi]
    if not bounds or any(a.range[1] > n for a in s.hi):
        bounds.insert(0, str(n))
    return _fold("imin", bounds)


def _fold(fn: str, xs: list) -> str:
    text = xs[0]
    for x in xs[1:]:
        text = f"{fn}({text}, {x})"
    return text


def _parallel_vars(stmts, out: list) -> list:
    for s in stmts:
        if isinstance(s, c.For) and s.parallel:
            out.append(s.var)
            _parallel_vars(s.body, out)
    return out


def thread_count(stmts) -> int:
    """The number of elements the parallel loops of a kernel cover (CUDA threads)."""
    n = 1
    for v in _parallel_vars(stmts, []):
        n *= v.extent
    return n


def statements(stmts, lang: Language, indent: int = 1, lanes=None, real: str = "float") -> str:
    """Print a kernel body (a tuple of statements) at the given indentation level. ``lanes``
    (C only): ``(lane variable, width)`` or ``(lane variable, width, prefix)`` of a batch kernel
    (extract/passes/lanes.py), whose loops over the lanes print as ``vreal`` (prefix ``v``) or
    ``hreal`` (``h``) statements where they can. ``real``: the C type of the reals
    (``"float"`` or ``"double"``), which names the maths functions."""
    p = _Printer(lang, indent, lanes, real)
    if lang.threads:
        vs = _parallel_vars(stmts, [])
        stride = 1
        for v in reversed(vs):
            p.strides[v] = stride
            stride *= v.extent
        p.total = stride
    p.block(stmts)
    return "\n".join(p.lines)

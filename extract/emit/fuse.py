"""Parameter gradients summed over the lanes inside their kernel (C batch entry points).

``M_batch_grad`` adds the parameter gradients of a group of samples to the thread's
accumulator in sample order: ``acc[e] += g[e * W + l]`` for ``l = 0..m-1``. Done after the lane
kernel, it writes and reads back a lane buffer of W values per parameter (3.2 MB per group for
the MLP's 128 x 784 weight), and its serial additions per element do not vectorise.

A parameter gradient whose lane kernel is one perfect nest ending in a lane loop
``for l: g[e(i) * W + l] = value`` (an outer product, a copy: no sum, no local buffer; the
innermost element loop ``k`` with coefficient 1 in ``e``) gets a second version,
``M_backward_<g>_lanes_acc(..., acc, m)``, that adds into ``acc`` directly: for 8 consecutive
``k`` (a strip; the last may be shorter) it computes the 8 vectors ``value`` (lanes of one
element each), transposes them in registers (``M_transpose``: lanes of element ``k + j`` ->
elements of lane ``l``), and adds lane ``l = 0..m-1`` of the strip's elements to their
accumulators, one lane after the other. Every element of ``acc`` receives the same values in
the same order as through the lane buffer, so the results are bitwise those of the unfused
path; the lane buffer is never written. Kernels of another form keep the unfused path.
"""
from __future__ import annotations

from ..ir import code as c
from .printer import WIDE, _Vector, affine, index_type


def _chain(stmts):
    """The loops of a perfect nest (outermost first) and its innermost statement."""
    loops = []
    while len(stmts) == 1 and isinstance(stmts[0], c.For):
        loops.append(stmts[0])
        stmts = stmts[0].body
    return loops, stmts


def _depends(e, v: c.IVar) -> bool:
    return v in c.free_ivars(e)


def fusable(body, lane: c.IVar, width: int, array: str):
    """``(loops, k, element offset, a, b)`` if the lane kernel ``body`` of ``array`` has the
    form the module docstring describes (``value = a * b``, ``b`` a load along ``k``, ``a``
    independent of ``k`` or absent), else None. Loops just outside ``k`` along which the
    element and ``b`` continue ``k``'s strides are merged into it."""
    loops, inner = _chain(tuple(body))
    if len(loops) < 2 or loops[-1].var != lane or len(inner) != 1:
        return None
    if any(f.lo or f.hi for f in loops):
        return None
    st = inner[0]
    if not (isinstance(st, c.Store) and st.op == "=" and st.array == array):
        return None
    if st.offset.coeff(lane) != 1:
        return None
    base = st.offset - c.Affine.of(lane)
    if lane in base.ivars() or base.const % width:
        return None
    terms = []
    for a, n in base.terms:
        if not isinstance(a, c.IVar) or n % width:
            return None
        terms.append((a, n // width))
    elem = c.Affine(tuple(terms), base.const // width)
    k = loops[-2].var
    if elem.coeff(k) != 1:
        return None
    value = st.value
    if isinstance(value, c.Load):
        a, b = None, value
    elif isinstance(value, c.Mul):
        a, b = (value.a, value.b) if _depends(value.b, k) else (value.b, value.a)
        if _depends(a, k) or not isinstance(b, c.Load):
            return None
    else:
        return None
    if b.offset.coeff(lane) != 1 or b.offset.coeff(k) != width:
        return None
    rest = b.offset - c.Affine.of(lane)
    if any(not isinstance(t, c.IVar) for t, _ in rest.terms):
        return None
    v = _Vector(lane, width, set())
    if a is not None and v.expr(a) is None:
        return None
    if v.expr(b) is None:
        return None
    # merge loops p outside k with elem and b continuing k: p * n + k
    outer = list(loops[:-2])
    n = k.extent
    while outer:
        p = outer[-1].var
        if elem.coeff(p) != n or b.offset.coeff(p) != n * width or \
                (a is not None and _depends(a, p)):
            break
        merged = c.IVar(k.name, n * p.extent, k.rank)
        m = {p: c.Affine(), k: c.Affine.of(merged)}
        elem = elem.subst(m)
        b = c.Load(b.array, b.offset.subst(m))
        n, k = n * p.extent, merged
        outer.pop()
    return tuple(outer), k, elem, a, b


def fused_body(form, lane: c.IVar, width: int, transpose: str, indent: int = 1,
               p: str = "v", parts: bool = False) -> str:
    """The C body of the ``_acc`` kernel for ``form`` (from :func:`fusable`): for each strip of
    ``width`` elements along ``k``, the lanes of ``b`` are transposed once (``b_[l]``: lane l
    of the strip's elements), then for every element block of the loops ``b`` does not read,
    ``acc += a[l] * b_[l]`` for the lanes l = 0..m-1 in order. ``transpose``: the C function
    that transposes the strip (``M_transpose``, ``M_htranspose``); ``p``: the prefix of the
    vector type and helpers (``v``, or ``h`` for the kernels of half the width). ``parts``:
    thread ``part`` of ``nparts`` runs its share of the outermost loop (a group the threads
    share, extract/passes/divide.py): every iteration adds into its own elements of ``acc``."""
    outer, k, elem, a, b = form
    v = _Vector(lane, width, set(), p)
    bval = v.expr(b)[0]
    outside = [f for f in outer if f.var in b.offset.ivars()]
    inside = [f for f in outer if f.var not in b.offset.ivars()]
    kn, n = k.name, k.extent
    lines, depth = [], indent

    def line(t):
        lines.append("    " * depth + t)

    def range_(n: int, first: bool, wide: bool = False) -> tuple:
        """The first and the end of a loop of n iterations (the thread's share if first), in
        ptrdiff_t if ``wide`` (strips of a loop past int's range)."""
        if parts and first:
            cast = f"({WIDE})" if wide else ""
            return f"{cast}part * {n} / nparts", f"({cast}part + 1) * {n} / nparts"
        return "0", str(n)

    def open_(f, first: bool):
        nonlocal depth
        lo, hi = range_(f.var.extent, first)
        t = index_type(f.var.extent)
        line(f"for ({t} {f.var.name} = {lo}; {f.var.name} < {hi}; {f.var.name}++) {{")
        depth += 1

    def close():
        nonlocal depth
        depth -= 1
        line("}")

    for i, f in enumerate(outside):
        open_(f, i == 0)
    ks = c.IVar(kn + "_s", n)
    e0 = affine(elem.subst({k: c.Affine.of(ks)}))
    strips = -(-n // width)
    # k counts in ptrdiff_t where n (a merged loop: up to a whole parameter) passes int's range
    t = index_type(n)
    mn = "lmin" if t == WIDE else "imin"
    if parts and not outside:           # the thread's share of the strips
        lo, hi = range_(strips, True, t == WIDE)
        end = f"{hi} * {width}" if n % width == 0 else f"{mn}({n}, {hi} * {width})"
        line(f"for ({t} {kn}_s = {lo} * {width}; {kn}_s < {end}; {kn}_s += {width}) {{")
    else:
        line(f"for ({t} {kn}_s = 0; {kn}_s < {n}; {kn}_s += {width}) {{")
    depth += 1
    whole = n % width == 0          # no short strip: whole vectors of acc
    if whole:
        line(f"{p}real b_[{width}];")
        line(f"for (int j_ = 0; j_ < {width}; j_++) {{")
    else:
        line(f"const int r_ = {mn}({width}, {n} - {kn}_s);")
        line(f"{p}real b_[{width}] = {{{{0}}}};")
        line("for (int j_ = 0; j_ < r_; j_++) {")
    line(f"    const {t} {kn} = {kn}_s + j_;")
    line(f"    b_[j_] = {bval};")
    line("}")
    line(f"{transpose}(b_);")
    for f in inside:
        open_(f, False)
    if a is not None:
        aval = v.expr(a)
        line(f"const {p}real a_ = {aval[0] if aval[2] else f'{p}splat({aval[0]})'};")
    line(f"real *restrict p_ = &acc[{e0}];")
    if whole:
        line(f"{p}real s_ = {p}load(p_);")
    else:
        line(f"{p}real s_ = {{0}};")
        line("for (int j_ = 0; j_ < r_; j_++)")
        line("    s_[j_] = p_[j_];")
    line("for (int l_ = 0; l_ < m; l_++)")
    line("    s_ += a_[l_] * b_[l_];" if a is not None else "    s_ += b_[l_];")
    if whole:
        line(f"{p}store(p_, s_);")
    else:
        line("for (int j_ = 0; j_ < r_; j_++)")
        line("    p_[j_] = s_[j_];")
    for _ in inside:
        close()
    close()
    for _ in outside:
        close()
    return "\n".join(lines)

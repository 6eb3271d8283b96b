"""Unit tests of the passes on hand-built IR: extract/ir/code.py (index arithmetic, scalar
simplification), extract/passes/lower.py (lower_to_loops: strategies, hoisting, sharing, the
temporary-array rule) and extract/emit/printer.py (C and CUDA text)."""
from __future__ import annotations

import pytest

from extract.ir import code as c
from extract.ir import ir
from extract.passes.lower import ExtractError, Options, lower_array
from extract.emit.printer import C, CUDA, affine, condition, expr, statements


# ---------------------------------------------------------------------------------------------
# hand-built IR

def V(name, shape, kind="context"):
    return ir.Var(shape, name, kind, "ar")


def X(name, shape):
    return ir.Var(shape, name, "index", "ix")


def sels(a, i):
    return ir.SelS(1, a, i)


def mul(a, b):
    return ir.Bin(a.shape, "mul", a, b)


def model(context, chain):
    arrays = [ir.Array(n, s, "context", "param") for n, s in context]
    binds = [ir.Array(n, e.shape, "chain", "", e) for n, e in chain]
    m = ir.Model("m", 1, "test", tuple(arrays), tuple(binds), binds[-1].name, ir.Zero(1), (),
                 ())
    m.arrays.update({a.name: a for a in (*arrays, *binds)})
    return m


def kernel(context, expr_, **opts):
    m = model(context, [("y", expr_)])
    return lower_array(m, m.chain[0], Options(**opts))


def text(k, lang=C):
    return statements(k.body, lang, 0)


def loops(stmts):
    return [s for s in stmts if isinstance(s, c.For)]


# ---------------------------------------------------------------------------------------------
# index arithmetic

I, J = c.IVar("i", 6, 0), c.IVar("j", 4, 1)
AI, AJ = c.Affine.of(I), c.Affine.of(J)


def test_div_mod_of_blocked_index_simplify():
    q = AI.scale(4) + AJ                     # i*4 + j with 0 <= j < 4
    assert c.idiv(q, 4) == AI
    assert c.imod(q, 4) == AJ
    assert affine(c.idiv(AJ, 2)) == "j / 2" and affine(c.imod(AJ, 2)) == "j % 2"
    assert c.idiv(AJ, 1) == AJ and c.imod(AJ, 1) == c.Affine.of(0)


def test_unit_extent_variables_vanish():
    assert c.Affine.of(c.IVar("k", 1)) == c.Affine.of(0)


def test_conditions_fold_by_range():
    assert c.in_range(AJ, 4) is True            # 0 <= j < 4 always
    assert c.in_range(AJ + c.Affine.of(10), 4) is False
    cond = c.in_range(AJ - AI, 3)
    assert condition(cond) == "j >= i && j < i + 3"
    assert c.cmp_eq(AI - AI) is True
    assert condition((c.cmp_eq(AJ - AI),)) in ("i == j", "j == i")


def test_point_sum_becomes_a_selection():
    t = c.IVar("t", 6, 5)
    body = c.select((c.cmp_eq(c.Affine.of(t) - AJ),), c.Load("x", c.Affine.of(t)))
    r = c.reduce((t,), body)
    assert r == c.Load("x", AJ)                 # 0 <= j < 4 <= 6: no guard left


def test_an_outer_sum_fixed_inside_an_inner_one_becomes_a_point():
    # sum_v sum_u [v == 2u + j] x[v] (the input gradient of a strided convolution has this
    # form): v is a point of each u, so the result sums over u alone, not over v times u
    v, u = c.IVar("v", 16, 5), c.IVar("u", 3, 6)
    av, au = c.Affine.of(v), c.Affine.of(u)
    inner = c.reduce((u,), c.select((c.cmp_eq(av - au.scale(2) - AJ),), c.Load("x", av)))
    r = c.reduce((v,), inner)
    assert isinstance(r, c.Reduce) and r.vars == (u,)
    assert r.body == c.Load("x", au.scale(2) + AJ)     # 2u + j <= 7 < 16: no guard left


def test_a_div_mod_point_over_more_positions_stays_inside():
    # sum_v sum_u [v == u div 2, u mod 2 == 0] x[u]: u is the point 2v of each v (bounds.py
    # makes it one), so the 16 positions of u are not swapped out for the 4 of v
    v, u = c.IVar("v", 4, 5), c.IVar("u", 16, 6)
    av, au = c.Affine.of(v), c.Affine.of(u)
    cond = (c.cmp_eq(c.Affine.of(c.IDiv(au, 2)) - av), c.cmp_eq(c.Affine.of(c.IMod(au, 2))))
    r = c.reduce((v,), c.reduce((u,), c.select(cond, c.Load("x", au))))
    assert isinstance(r, c.Reduce) and r.vars == (v,)


# ---------------------------------------------------------------------------------------------
# printing

def L(name):
    return c.Load(name, c.Affine.of(0))


@pytest.mark.parametrize("e, want", [
    (c.Add(L("a"), c.Add(L("b"), L("c"))), "a[0] + (b[0] + c[0])"),
    (c.Add(c.Add(L("a"), L("b")), L("c")), "a[0] + b[0] + c[0]"),
    (c.Mul(c.Add(L("a"), L("b")), L("c")), "(a[0] + b[0]) * c[0]"),
    (c.Mul(L("a"), c.Mul(L("b"), L("c"))), "a[0] * (b[0] * c[0])"),
    (c.Add(L("a"), c.Neg(L("b"))), "a[0] - b[0]"),
    (c.Add(L("a"), c.Neg(c.Add(L("b"), L("c")))), "a[0] - (b[0] + c[0])"),
    (c.Neg(c.Mul(L("a"), L("b"))), "-(a[0] * b[0])"),
    (c.Scale(c.Add(L("a"), L("b")), 4), "(a[0] + b[0]) / 4"),
    (c.Scale(c.Lit(1), 2), "(real)1 / 2"),
    (c.Un("logistic", c.Neg(L("a"))), "logistic(-a[0])"),
    (c.Un("exp", c.Add(L("a"), L("b"))), "expf(a[0] + b[0])"),
    (c.Un("log", L("a")), "logf(a[0])"),
    (c.Un("sqrt", c.Add(c.Lit(1), c.Mul(L("a"), L("a")))), "sqrtf(1 + a[0] * a[0])"),
    (c.Mul(L("a"), c.Un("sqrt", L("b"))), "a[0] * sqrtf(b[0])"),
    (c.Un("recip", c.Un("sqrt", L("b"))), "1 / sqrtf(b[0])"),
    (c.Un("relu", L("a")), "relu(a[0])"),
    (c.Un("step", c.Neg(L("a"))), "step(-a[0])"),
    (c.Un("recip", c.Add(c.Lit(1), L("a"))), "1 / (1 + a[0])"),
    (c.Un("recip", c.Mul(L("a"), L("b"))), "1 / (a[0] * b[0])"),
    (c.Mul(L("a"), c.Un("recip", L("b"))), "a[0] * (1 / b[0])"),
    (c.Un("recip", c.Add(c.Lit(1), c.Lit(1))), "(real)1 / (1 + 1)"),
    (c.Mul(c.Select((c.Cmp(AJ - c.Affine.of(2), "ge"),), L("a")), L("b")),
     "(j >= 2 ? a[0] : 0) * b[0]"),
])
def test_minimal_parentheses(e, want):
    assert expr(e) == want


def test_maths_functions_follow_the_real_type():
    e = c.Un("exp", c.Un("log", L("a")))
    assert expr(e) == expr(e, 0, "float") == "expf(logf(a[0]))"
    assert expr(e, 0, "double") == "exp(log(a[0]))"
    e = c.Un("sqrt", c.Un("sqrt", L("a")))
    assert expr(e) == expr(e, 0, "float") == "sqrtf(sqrtf(a[0]))"
    assert expr(e, 0, "double") == "sqrt(sqrt(a[0]))"


def test_relu_and_step_move_a_guard_outwards():
    sel = c.Select((c.Cmp(AJ - c.Affine.of(2), "ge"),), L("a"))
    assert c.un("relu", sel) == c.Select(sel.cond, c.Un("relu", L("a")))   # relu 0 = 0
    assert c.un("step", c.ZERO) == c.ZERO
    assert c.un("exp", c.ZERO) == c.Un("exp", c.ZERO)                       # exp 0 = 1
    assert c.un("recip", sel) == c.Un("recip", sel)
    # sqrt 0 = 0, but the validator's sqrt is a random function: nothing moves, nothing folds
    assert c.un("sqrt", sel) == c.Un("sqrt", sel)
    assert c.un("sqrt", c.ZERO) == c.Un("sqrt", c.ZERO)


def test_affine_layout():
    assert affine(AI.scale(24) + AJ) == "i * 24 + j"
    assert affine(AJ - AI.scale(3) + c.Affine.of(2)) == "j - i * 3 + 2"
    assert affine(c.Affine.of(0)) == "0"


# ---------------------------------------------------------------------------------------------
# lowering

A = V("a", (3, 4))
B = V("b", 4)


def test_top_sum_accumulates_into_zeroed_output():
    # y = sum t0<3>. a[t0]     (shape 4): zero y, then y[j] += a[t0][j], j innermost
    e = ir.Sum(4, 3, "t0", ir.Sel(4, A, X("t0", 3)))
    k = kernel([("a", (3, 4))], e)
    assert k.strategy == "dest"
    out = text(k)
    assert out.splitlines()[0] == "for (int j = 0; j < 4; j++) {"
    assert "y[j] = 0;" in out and "y[j] += a[t0 * 4 + j];" in out
    assert out.index("y[j] = 0;") < out.index("+=")
    # the accumulation nest: t0 outside, the contiguous j inside
    acc = loops(k.body)[1]
    assert acc.var.name == "t0" and loops(acc.body)[0].var.name == "j"


def test_element_strategy_uses_scalar_accumulator():
    e = ir.Sum(4, 3, "t0", ir.Sel(4, A, X("t0", 3)))
    out = text(kernel([("a", (3, 4))], e, strategy="element"))
    assert "real acc0 = 0;" in out and "acc0 += a[t0 * 4 + j];" in out
    assert "y[j] = acc0;" in out and "+=" not in out.replace("acc0 +=", "")


def test_reduction_hoisted_to_the_loop_it_depends_on():
    # y = imap i0<3>. imaps i1<4>. (sum t2<4>. a[i0][t2]) * b[i1]
    s = ir.Sum(1, 4, "t2", sels(ir.Sel(4, A, X("i0", 3)), X("t2", 4)))
    e = ir.IMap((3, 4), 3, "i0", ir.IMapS(4, 4, "i1", mul(s, sels(B, X("i1", 4)))))
    k = kernel([("a", (3, 4)), ("b", 4)], e, strategy="element")
    outer = loops(k.body)[0]
    assert outer.var.extent == 3
    kinds = [type(s).__name__ for s in outer.body]
    assert kinds == ["Decl", "For", "For"]       # acc computed once per i0, before the j1 loop
    assert text(k).count("real acc") == 1


def test_temporary_array_needed_is_an_error_naming_binding_and_subterm():
    # y = imap i0<3>. imaps i1<4>. (sum t2<3>. a[t2][i1]) * b[i0]: the sum depends on i1 only,
    # inside the i0 loop: computing it once would need a temporary of 4 elements
    s = ir.Sum(1, 3, "t2", sels(ir.Sel(4, A, X("t2", 3)), X("i1", 4)))
    e = ir.IMap((3, 4), 3, "i0", ir.IMapS(4, 4, "i1", mul(s, sels(V("c", 3), X("i0", 3)))))
    ctx = [("a", (3, 4)), ("c", 3)]
    with pytest.raises(ExtractError) as info:
        kernel(ctx, e)
    msg = str(info.value)
    assert "binding 'y'" in msg and "sum t2<3>. a[t2][i1]" in msg
    assert "temporary array" in msg and "extent 3" in msg
    # configurable: a recomputation factor of 3 may be allowed
    k = kernel(ctx, e, recompute_limit=3)
    assert "acc" in text(k)


def test_equal_reductions_are_shared():
    s = ir.Sum(1, 4, "t1", sels(ir.Sel(4, A, X("i0", 3)), X("t1", 4)))
    e = ir.IMapS(3, 3, "i0", mul(ir.Un(1, "logistic", s), ir.Un(1, "logistic", s)))
    out = text(kernel([("a", (3, 4))], e))
    assert out.count("real acc") == 1
    assert "logistic(acc0) * logistic(acc0)" in out


def test_reduction_stays_inside_its_guard():
    # y = imap i0<2>. backslide(i0, imaps i1<3>. sum t2<4>. a[i1][t2])   (shape [2, 4]):
    # the sum is evaluated at position j - i0, valid only when 0 <= j - i0 < 3
    s = ir.Sum(1, 4, "t2", sels(ir.Sel(4, A, X("i1", 3)), X("t2", 4)))
    inner = ir.IMapS(3, 3, "i1", s)
    e = ir.IMap((2, 4), 2, "i0", ir.Backslide(4, 2, 2, X("i0", 2), inner))
    out = text(kernel([("a", (3, 4))], e))
    guard = out.index("if (j1 >= j0 && j1 < j0 + 3) {")
    assert guard < out.index("real acc")           # accumulator only under the guard
    assert "a[j1 * 4 + t2 - j0 * 4]" in out


def test_constant_index_is_a_constant_offset():
    # y = backslide((1, 1), a): a [3, 4] padded by one zero on every side, [5, 6]; the
    # guard is 1 <= j < (4, 5), and the read is at the fixed offset -(1 * 4 + 1)
    e = ir.Backslide((5, 6), (3, 3), (2, 3), ir.IxConst((3, 3), (1, 1)), A)
    out = text(kernel([("a", (3, 4))], e))
    assert ("y[j0 * 6 + j1] = j0 >= 1 && j0 < 4 && j1 >= 1 && j1 < 5 ? a[j0 * 4 + j1 - 5] : 0;"
            in out), out
    # a selection at a constant is a load at a constant offset
    assert text(kernel([("a", (3, 4))], sels(A, ir.IxConst((3, 4), (2, 1))))) == "y[0] = a[9];"
    # a zero_but of two different constants is zero, of equal ones the array
    zb = lambda p: ir.ZeroBut(4, ir.IxConst(3, 1), ir.IxConst(3, p), B)  # noqa: E731
    assert "y[j] = 0;" in text(kernel([("b", 4)], zb(2)))
    assert "y[j] = b[j];" in text(kernel([("b", 4)], zb(1)))


def test_sqrt_of_a_padded_array_computes_sqrt_of_the_padding():
    """sqrt(0) is computed, not folded (extract/ir/code.py un): the padding's zeros pass through
    sqrtf, where relu's guard moves outwards."""
    pad = ir.Backslide((5, 6), (3, 3), (2, 3), ir.IxConst((3, 3), (1, 1)), A)
    guard = "j0 >= 1 && j0 < 4 && j1 >= 1 && j1 < 5"
    assert (f"y[j0 * 6 + j1] = sqrtf({guard} ? a[j0 * 4 + j1 - 5] : 0);"
            in text(kernel([("a", (3, 4))], ir.Un((5, 6), "sqrt", pad))))
    assert (f"y[j0 * 6 + j1] = {guard} ? relu(a[j0 * 4 + j1 - 5]) : 0;"
            in text(kernel([("a", (3, 4))], ir.Un((5, 6), "relu", pad))))


def test_cuda_maps_parallel_loops_to_threads():
    e = ir.IMap((3, 4), 3, "i0", ir.IMapS(4, 4, "i1", mul(sels(ir.Sel(4, A, X("i0", 3)),
                                                                X("i1", 4)),
                                                           sels(B, X("i1", 4)))))
    k = kernel([("a", (3, 4)), ("b", 4)], e, strategy="element")
    cu = text(k, CUDA)
    assert "const int j0 = idx / 4;" in cu and "const int j1 = idx % 4;" in cu
    assert "for (" not in cu
    assert "y[j0 * 4 + j1] = a[j0 * 4 + j1] * b[j1];" in cu
    assert "for (int j0 = 0; j0 < 3; j0++)" in text(k, C)


def test_share_bindings_reads_the_binding():
    from extract.passes.share import share_bindings
    c11 = V("c11", 4)
    lg = ir.Un(4, "logistic", c11)
    grad_expr = mul(lg, ir.Bin(4, "plus", ir.One(4), ir.Minus(4, lg)))
    m = model([("c11", 4)], [("c1", lg)])
    g = ir.Array("d_c11", 4, "grad", "c11", grad_expr)
    m = ir.Model("m", 1, "t", m.context, m.chain, "c1", ir.Zero(4), (g,), ())
    m.arrays.update({a.name: a for a in (*m.context, *m.chain, g)})
    shared = share_bindings(m)
    assert ir.show(shared.gradients[0].expr) == "c1 * (one + (-c1))"
    assert shared.chain[0].expr == lg                      # the binding itself is unchanged
    k = lower_array(shared, shared.gradients[0])
    assert "logistic" not in text(k) and k.reads == ("c1",)


def test_accumulation_nest_gets_a_contiguous_innermost_loop():
    # y[t0][t1] = sum over t2 of d[t0][t2] * x[t1 + t2]: the t1 loop becomes innermost
    d, x = V("d", (3, 8)), V("x", 12)
    body = lambda t0, t1, t2: mul(sels(ir.Sel(8, d, t0), t2),
                                  sels(ir.Slide(5, 8, 4, t2, x), t1))
    e = ir.Sum((3, 5), 3, "t0", ir.Sum((3, 5), 5, "t1", ir.Sum((3, 5), 8, "t2", ir.IMap(
        (3, 5), 3, "i3", ir.ZeroBut(5, X("i3", 3), X("t0", 3), ir.IMapS(5, 5, "i4", ir.ZeroBut(
            1, X("i4", 5), X("t1", 5), body(X("t0", 3), X("t1", 5), X("t2", 8)))))))))
    out = text(kernel([("d", (3, 8)), ("x", 12)], e))
    lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("for")]
    assert [ln.split()[2] for ln in lines[-3:]] == ["t0", "t2", "t1"], out
    assert "y[t0 * 5 + t1] += d[t0 * 8 + t2] * x[t1 + t2];" in out


def test_guards_become_loop_bounds_and_points():
    from extract.passes.bounds import tighten_bounds
    t = c.IVar("t", 5, 0)
    j = c.IVar("j", 12, 1)
    k = c.IVar("k", 12, 2)
    at, aj, ak = c.Affine.of(t), c.Affine.of(j), c.Affine.of(k)
    st = c.Store("y", aj, "+=", c.Load("x", aj - at))
    window = c.For(j, (c.If(c.in_range(aj - at, 8), (st,)),))
    (loop,) = tighten_bounds((c.For(t, (window,)),))
    out = statements((loop,), C, 0)
    assert "for (int j = 0; j < 8; j++) {" in out          # [t, t + 8) counted from 0
    assert "y[t + j] += x[j];" in out and "if (" not in out
    point = c.For(k, (c.If((c.cmp_eq(ak - at),), (c.Store("y", ak, "+=", c.Lit(1)),)),))
    (stmt,) = tighten_bounds((point,))
    assert statements((stmt,), C, 0) == "y[t] += 1;"        # 0 <= t < 5 <= 12: no guard


def test_a_strided_guard_becomes_a_bound_by_division():
    # 2t + a - 1 >= 0 (a strided convolution's border: t >= ceil((1 - a) / 2)) and
    # -3t + b >= 0 (t <= b div 3): bounds by a division of a value never negative, the same
    # points running (every a and b, on the term-recording interpreter)
    from extract.passes.bounds import tighten_bounds
    from loopnest import run
    t, a, b = c.IVar("t", 8, 2), c.IVar("a", 3, 0), c.IVar("b", 20, 1)
    at, aa, ab = c.Affine.of(t), c.Affine.of(a), c.Affine.of(b)
    st = c.Store("y", aa.scale(160) + ab.scale(8) + at, "+=", c.Load("x", at.scale(2) + aa))
    guard = (c.Cmp(at.scale(2) + aa - c.Affine.of(1), "ge"), c.Cmp(ab - at.scale(3), "ge"))
    before = (c.For(a, (c.For(b, (c.For(t, (c.If(guard, (st,)),)),)),)),)
    after = tighten_bounds(before)
    out = statements(after, C, 0)
    assert "if (" not in out, out
    assert "(-a + 2) / 2" in out and "b / 3 + 1" in out, out
    assert run(after, "y") == run(before, "y")

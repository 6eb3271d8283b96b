"""The model as mathematics (extract/render/): ``python -m extract MODEL --html/--latex``.

Layers: the LaTeX of a tiny hand-built dump, to the character; the CNN's formulas; every
formula, evaluated as the page writes it (index arithmetic, Iverson brackets, sums), equals the
NumPy oracle's value of its binding (hand-built, golden and random dumps); the MathML of every
dump at hand (the Agda golden dumps, the hand-built ones, random dumps covering every
op of docs/dump-format.md §4) is well-formed XML, with no script, nothing fetched and no IR
left in the math; long right-hand sides are broken into lines; the CLI; the zoo's model files
(needs Agda); and the CNN's page in headless Chromium: a screenshot that is not blank, and the
layout of the math read back from the browser (fractions stacked, subscripts lowered, limits
under the Σ), which raw MathML source shown as text would not have.
"""
from __future__ import annotations

import html as htmllib
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import dumpgen
import oracle
from extract.ir import dump, ir
from extract.front import frontend
from extract.render import render
from extract.render import render_math as rm
from extract.render.render_print import latex, width

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = sorted((ROOT / "tests" / "golden" / "dump").glob("*.json"))
DATA = sorted((ROOT / "tests" / "data").glob("*.json"))
CNN = ROOT / "tests" / "golden" / "dump" / "cnn.json"


def ops_of_section_4() -> list[str]:
    """The op names of the table in docs/dump-format.md §4."""
    text = (ROOT / "docs" / "dump-format.md").read_text()
    section = text.split("## 4.")[1].split("## 5.")[0]
    return [op for op in re.findall(r"^\| `([a-z_]+)` \|", section, re.M) if op != "op"]


def corpus() -> dict[str, dict]:
    """Every dump at hand, by a readable id: golden, hand-built, random (both kinds)."""
    out = {f"golden/{p.stem}": json.loads(p.read_text()) for p in GOLDEN}
    out.update({f"data/{p.stem}": json.loads(p.read_text()) for p in DATA})
    for seed in range(40):
        for kind in ("random", "ad"):
            out[f"random/{kind}/{seed}"] = dumpgen.random_dump(seed, gradients=kind)
    for seed in range(12):     # with every elementwise function (exp, log, recip, relu, step)
        out[f"random/fns/{seed}"] = dumpgen.random_dump(seed, gradients="ad", fns=dumpgen.UNARY)
    for seed in (0, 10):       # and sqrt (version 4), in the chain and the gradients
        out[f"random/sqrt/{seed}"] = dumpgen.random_dump(seed, gradients="ad",
                                                         fns=dumpgen.UNARY_V4)
    for seed in (0, 3):        # and erf, derf (version 6)
        out[f"random/erf/{seed}"] = dumpgen.random_dump(seed, gradients="ad", fns=dumpgen.V6)
    for p in sorted((ROOT / "build" / "dump" / "zoo").glob("*.json")):  # after make dump
        out[f"zoo/{p.stem}"] = json.loads(p.read_text())
    return out


@pytest.fixture(scope="module")
def dumps() -> dict[str, dict]:
    return corpus()


@pytest.fixture(scope="module")
def cnn() -> ir.Model:
    return dump.load(CNN)


def body_xml(page: str) -> ET.Element:
    """The page's body, parsed as XML (MathML must be well-formed)."""
    body = page.split("<body>", 1)[1].split("</body>", 1)[0]
    return ET.fromstring(f"<body>{body}</body>")


def math_text(page: str) -> str:
    """The text inside the page's <math> elements."""
    return " ".join("".join(m.itertext()) for m in body_xml(page).iter("math"))


def tiny() -> dict:
    """A window (slide), its two adjoints (backslide, ix_minus), logistic, a mean."""
    b = dumpgen.Builder("tiny")
    x, w = b.param("x", 4), b.param("w1", 2)
    y = b.let("y", dumpgen.sum_(2, lambda k: dumpgen.slide(k, x)
                                * dumpgen.imaps(3, lambda _: w[k])))
    z = b.let("z", dumpgen.logistic(y))
    loss = b.let("loss", dumpgen.scaledown(2, dumpgen.sum_(3, lambda j: (z * z)[j])))
    b.seed(loss, dumpgen.one(1))
    d_loss = b.grad(loss, dumpgen.one(1))
    d_z = b.grad(z, dumpgen.imaps(3, lambda j: d_loss * z[j]))
    d_y = b.grad(y, d_z * z * (dumpgen.one(3) + dumpgen.minus(z)))
    b.grad(x, dumpgen.sum_(2, lambda k: dumpgen.backslide(
        k, dumpgen.imaps(3, lambda j: d_y[j] * w[k]))))
    b.grad(w, dumpgen.imaps(2, lambda k: dumpgen.sum_(4, lambda q: dumpgen.ix_minus(
        q, k, lambda j: d_y[j] * x[q]))))
    return b.build()


TINY_LATEX = r"""
\paragraph{Inputs and parameters.}
\begin{align*}
  x &\in \mathbb{R}^{4} && \text{parameter} \\
  w^{(1)} &\in \mathbb{R}^{2} && \text{parameter}
\end{align*}

\paragraph{Forward.}
Each binding is computed once, in this order, from the inputs, the parameters and the bindings above it.
\begin{align*}
  y_{i} &= \sum_{p<2}x_{i+p}\cdot w_{p}^{(1)} && y\in\mathbb{R}^{3} \\
  z &= \sigma\left( y \right) && z\in\mathbb{R}^{3}
\end{align*}

\paragraph{Loss.}
The objective is \texttt{loss}; the reverse pass starts from the seed on \texttt{loss}.
\begin{align*}
  \mathrm{loss} &= \frac{1}{2}\sum_{p<3}z_{p}^{2} && \mathrm{loss}\in\mathbb{R} \\
  \text{seed on}\, \mathrm{loss} &= 1
\end{align*}

\paragraph{Gradients of the bindings.}
The reverse pass, in order, after the optimiser: each gradient may use the forward bindings and the gradients above it.
\begin{align*}
  \partial\mathrm{loss} &= 1 && \partial\mathrm{loss}\in\mathbb{R} \\
  \partial z_{i} &= \partial\mathrm{loss}\cdot z_{i} && \partial z\in\mathbb{R}^{3} \\
  \partial y &= \partial z\odot z\odot\left( 1-z \right) && \partial y\in\mathbb{R}^{3}
\end{align*}

\paragraph{Gradients of the parameters.}
\begin{align*}
  \partial x_{i} &= \sum_{p<2}\left[ 0\le i-p<3 \right]\, \partial y_{i-p}\cdot w_{p}^{(1)} && \partial x\in\mathbb{R}^{4} \\
  \partial w_{i}^{(1)} &= \sum_{p<4}\left[ 0\le p-i<3 \right]\, \partial y_{p-i}\cdot x_{p} && \partial w^{(1)}\in\mathbb{R}^{2}
\end{align*}
"""


# ------------------------------------------------------------------------------------------
# LaTeX


def test_latex_of_a_tiny_dump():
    text = render.latex(dump.parse(tiny()))
    assert text.startswith("% tiny: the model as mathematics\n")
    assert "% needs \\usepackage{amsmath,amssymb}" in text
    assert "\n" + text.split("\n\n", 1)[1] == TINY_LATEX


def test_latex_of_the_cnn(cnn):
    """The paper's network, binding by binding: windows as index sums, blocks as 2j + p,
    their adjoints as Iverson brackets and floors, names as written."""
    text = render.latex(cnn)
    rows = [
        r"c_{i,\,j,\,l}^{(11)} &= \sum_{p,\,q<5}\mathrm{inp}_{j+p,\,l+q}\cdot k_{i,\,p,\,q}^{(1)}"
        r"+b_{i}^{(1)}",
        r"c^{(1)} &= \sigma\left( c^{(11)} \right)",
        r"s_{i,\,j,\,l}^{(1)} &= \frac{1}{4}\sum_{p,\,q<2}c_{i,\,2j+p,\,2l+q}^{(1)}",
        r"r &= \sigma\left( r^{(1)} \right) && r\in\mathbb{R}^{10\times1\times1\times1\times1}"
        r"\quad \text{prediction}",
        r"\mathrm{loss} &= \frac{1}{2}\sum_{p<10}{\left( r_{p}-\mathrm{target}_{p} \right)}^{2}",
        r"\partial c_{i,\,j,\,l}^{(2)} &= \frac{\partial s_{i,\,\left\lfloor j/2 \right\rfloor,\,"
        r"\left\lfloor l/2 \right\rfloor}^{(2)}}{4}",
        r"\partial s_{i,\,j,\,l}^{(1)} &= \sum_{p<12}\sum_{\substack{q<6 \\ t,\,u<5}}\left[ i=q "
        r"\right]\left[ 0\le j-t<8 \right]\left[ 0\le l-u<8 \right]\, \partial c_{p,\,j-t,\,l-u}"
        r"^{(21)}\cdot k_{p,\,q,\,t,\,u}^{(2)}",
        r"\partial k_{i,\,j,\,l}^{(1)} &= \sum_{p,\,q<24}\partial c_{i,\,p,\,q}^{(11)}\cdot"
        r"\mathrm{inp}_{j+p,\,l+q}",
    ]
    for r in rows:
        assert r in text
    assert text.count(r"\begin{align*}") == text.count(r"\end{align*}") == 5
    # every gradient entry has its row, in the dump's order
    lhs = [line.split("&")[0].strip() for line in text.splitlines() if "&=" in line]
    assert sum(x.startswith(r"\partial") for x in lhs) == len(cnn.gradients)


def test_index_names_by_role(cnn):
    """Positions of the result are i, j, …, summation variables p, q, …; a letter that names
    an array (k1 is k^(1), r, s1, …) is skipped; no IR binder name (i0, t1, k2) is left."""
    page = render.html(cnn)
    text = math_text(page)
    assert not re.search(r"\b[itk]\d\b", text)
    c11 = render.Renderer(cnn).equation("c11", cnn.arrays["c11"].shape, cnn.arrays["c11"].expr)
    assert latex(c11.lhs) == r"c_{i,\,j,\,l}^{(11)}"       # k is k1's letter


# ------------------------------------------------------------------------------------------
# the formulas mean what the dump means


def ev_ix(t, env: dict, vals: dict | None = None, shapes: dict | None = None) -> int:
    if isinstance(t, rm.IConst):
        return t.n
    if isinstance(t, rm.IVar):
        return env[t.name]
    if isinstance(t, rm.IAdd):
        return ev_ix(t.a, env, vals, shapes) + ev_ix(t.b, env, vals, shapes)
    if isinstance(t, rm.ISub):
        return ev_ix(t.a, env, vals, shapes) - ev_ix(t.b, env, vals, shapes)
    if isinstance(t, rm.IScale):
        return t.c * ev_ix(t.a, env, vals, shapes)
    if isinstance(t, rm.IFloor):
        return ev_ix(t.a, env, vals, shapes) // t.c
    if isinstance(t, rm.IMod):
        return ev_ix(t.a, env, vals, shapes) % t.c
    if isinstance(t, rm.IArg):
        # the first position, row-major, where the body is largest (IEEE <: a NaN never wins)
        every = list(itertools.product(*(range(n) for _, n in t.vars)))
        at = lambda p: ev(t.body, {**env, **{v: i for (v, _), i in zip(t.vars, p)}},
                          vals, shapes)
        best = every[0]
        for p in every[1:]:
            if at(best) < at(p):
                best = p
        return best[t.k]
    raise TypeError(t)


def holds(c, env: dict, vals: dict, shapes: dict) -> bool:
    if c[0] == "eq":
        return ev_ix(c[1], env, vals, shapes) == ev_ix(c[2], env, vals, shapes)
    _, t, lower, upper = c
    v = ev_ix(t, env, vals, shapes)
    return (not lower or v >= 0) and (upper is None or v < upper)


def ev(m, env: dict, vals: dict, shapes: dict):
    """The value of a formula as the page shows it: [P] is strongly zero (a false bracket
    makes a product 0 before its other factors are looked at), and every element read must
    be in bounds (the brackets must guard every window)."""
    if isinstance(m, rm.MConst):
        return float(m.n)
    if isinstance(m, rm.MArr):
        return vals[m.name]
    if isinstance(m, rm.MElem):
        idx, given = [], iter(m.idx)
        for n in ir.leaves(shapes[m.name]):
            i = 0 if n == 1 else ev_ix(next(given), env, vals, shapes)
            assert 0 <= i < n, f"{m.name}: index {i} out of 0..{n - 1}"
            idx.append(i)
        return vals[m.name].reshape(ir.leaves(shapes[m.name]))[tuple(idx)]
    if isinstance(m, rm.MAdd):
        out = 0.0
        for sign, t in m.terms:
            out = out + ev(t, env, vals, shapes) if sign == "+" else out - ev(t, env, vals, shapes)
        return out
    if isinstance(m, rm.MMul):
        out = 1.0
        for f in m.factors:
            if isinstance(f, rm.MIverson) and not all(holds(c, env, vals, shapes) for c in f.conds):
                return 0.0
            if not isinstance(f, rm.MIverson):
                out = out * ev(f, env, vals, shapes)
        return out
    if isinstance(m, rm.MIverson):
        return float(all(holds(c, env, vals, shapes) for c in m.conds))
    if isinstance(m, rm.MNeg):
        return -ev(m.a, env, vals, shapes)
    if isinstance(m, rm.MScale):
        return ev(m.a, env, vals, shapes) / m.n
    if isinstance(m, rm.MPow):
        return ev(m.a, env, vals, shapes) ** m.k
    if isinstance(m, rm.MSqrt):
        return np.sqrt(ev(m.a, env, vals, shapes))
    if isinstance(m, rm.MApp):
        x = ev(m.a, env, vals, shapes)
        fns = {"σ": lambda x: 1.0 / (1.0 + np.exp(-x)), "exp": np.exp, "log": np.log,
               "relu": lambda x: np.where(x <= 0, 0.0, x),
               "step": lambda x: np.where(x <= 0, 0.0, 1.0), "detach": lambda x: x,
               "erf": np.vectorize(math.erf, otypes=[float]),
               "erf′": lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x)}
        return fns[m.fn](x)
    if isinstance(m, rm.MMax):
        a, b = ev(m.a, env, vals, shapes), ev(m.b, env, vals, shapes)
        return np.where(a - b <= 0, b, a)
    if isinstance(m, rm.MMaxOver):
        # the value at the argmax (the first largest; a NaN never wins)
        best = None
        for at in itertools.product(*(range(n) for _, n in m.vars)):
            x = ev(m.body, {**env, **{v: i for (v, _), i in zip(m.vars, at)}}, vals, shapes)
            if best is None or best < x:
                best = x
        return best
    if isinstance(m, rm.MSum):
        out = 0.0
        for at in itertools.product(*(range(n) for _, n in m.vars)):
            inner = {**env, **{v: i for (v, _), i in zip(m.vars, at)}}
            out = out + ev(m.body, inner, vals, shapes)
        return out
    raise TypeError(m)


def evaluate_formula(r: render.Renderer, shape, expr, vals: dict, shapes: dict,
                     sample: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The formula's values and a mask of the positions evaluated (all, or ``sample`` random
    ones: the CNN's formulas are too many sums for Python loops at every position)."""
    names, m = r.formula(shape, expr)
    if names is None:
        value = np.broadcast_to(ev(m, {}, vals, shapes), ir.leaves(shape))
        return value, np.ones(value.shape, bool)
    out, done = np.zeros(ir.leaves(shape)), np.zeros(ir.leaves(shape), bool)
    free = [n for n, x in enumerate(ir.leaves(shape)) if x != 1]
    every = list(itertools.product(*(range(n) for _, n in names)))
    if sample is not None and len(every) > sample:
        every = [every[k] for k in np.random.default_rng(0).choice(len(every), sample)]
    for at in every:
        idx = [0] * len(ir.leaves(shape))
        for k, i in zip(free, at):
            idx[k] = i
        out[tuple(idx)] = ev(m, {v: i for (v, _), i in zip(names, at)}, vals, shapes)
        done[tuple(idx)] = True
    return out, done


@pytest.mark.parametrize("key", [f"golden/{p.stem}" for p in GOLDEN]
                         + [f"data/{p.stem}" for p in DATA]
                         + [f"random/{k}/{s}" for k in ("random", "ad") for s in range(12)]
                         + [f"random/fns/{s}" for s in range(6)]
                         + ["random/sqrt/0", "random/sqrt/10"])
def test_formulas_mean_what_the_dump_means(key, dumps):
    """Every formula of the page, evaluated as written (index arithmetic, brackets, sums),
    equals the NumPy oracle's value of its binding or gradient, at every position."""
    d = dumps[key]
    model = dump.parse(d)
    vals = {k: np.asarray(v, dtype=np.float64)
            for k, v in dumpgen.random_context_values(d, seed=1).items()}
    want = oracle.evaluate(d, vals, np.float64)
    vals.update(want)
    shapes = {a.name: a.shape for a in (*model.context, *model.chain, *model.gradients)}
    r = render.Renderer(model)
    for a in (*model.chain, *model.gradients):
        # the CNN, and arrays of more than 1,000 elements (lse_long's 5,000): at 4 positions
        sample = 4 if "cnn" in key or int(np.prod(ir.leaves(a.shape))) > 1000 else None
        got, done = evaluate_formula(r, a.shape, a.expr, vals, shapes, sample)
        np.testing.assert_allclose(got[done], want[a.name][done], rtol=1e-12, atol=1e-12,
                                   err_msg=a.name)
    seed, done = evaluate_formula(r, shapes[model.seed_of], model.seed, vals, shapes)
    np.testing.assert_allclose(seed[done], want[oracle.SEED_KEY][done], rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------
# MathML


def test_every_op_is_covered(dumps):
    ops = set(ops_of_section_4())
    assert len(ops) >= 22, ops
    used = set().union(*(dumpgen.ops_used(d) for d in dumps.values()))
    assert ops <= used, f"no dump at hand uses {sorted(ops - used)}"


@pytest.mark.parametrize("op", ops_of_section_4())
def test_every_op_renders(op, dumps):
    """Every dump using ``op`` renders, its MathML is well-formed, and no IR is left in it."""
    ids = [k for k, d in dumps.items() if op in dumpgen.ops_used(d)]
    assert ids, f"no dump uses {op}"
    for k in ids[:6]:
        model = dump.parse(dumps[k])
        page = render.html(model)
        text = math_text(page)
        for word in ("imap", "sels", "slide", "zero_but", "ix_", "backslide", "scaledown",
                     "logistic", "d_"):
            assert word not in text, (k, word)
        assert render.latex(model).count(r"\begin{align*}") >= 3, k


def test_pages_are_self_contained(dumps):
    for k, d in dumps.items():
        page = render.html(dump.parse(d))
        root = body_xml(page)                                   # well-formed
        assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page, k
        low = page.lower()
        for word in ("<script", "src=", "href=", "url(", "@import", "http:", "https:"):
            assert word not in low, (k, word)
        assert len(list(root.iter("math"))) >= 5, k
        # a negated term is subtracted, never added: no "+ −" (lenet5's softmax gradient)
        assert "<mo>+</mo><mo>−</mo>" not in page, k
        assert not re.search(r"\+\s*-", render.latex(dump.parse(d))), k
        for el in root.iter():
            assert el.tag in MATHML | HTML_TAGS, (k, el.tag)


MATHML = {"math", "mrow", "mi", "mn", "mo", "mtext", "msub", "msup", "msubsup", "mfrac",
          "msqrt", "munder", "mtable", "mtr", "mtd", "mspace"}
HTML_TAGS = {"body", "h1", "h2", "p", "ul", "li", "code"}


def test_maximum_argmax_and_detach():
    """The maximum sels (imaps b) (argmax b) is max over the positions (a max-pool's window),
    an argmax elsewhere (a gradient's bracket) is argmax, with the leaf it gives when its
    position has several; detach is written as a function; the legend explains each."""
    pool = render.latex(dump.load(ROOT / "tests" / "data" / "maxpool.json"))
    assert r"\mathrm{pool}_{i,\,j,\,k} &= \max_{p,\,q<4}x_{i,\,4j+p,\,4k+q}" in pool
    assert (r"\left[ j\bmod4={\left( \operatorname*{arg\,max}_{s,\,t<4}\left( "
            r"x_{p,\,4q+s,\,4r+t} \right) \right)}_{1} \right]") in pool
    lse = render.latex(dump.load(ROOT / "tests" / "data" / "lse_detach.json"))
    assert r"m &= \mathrm{detach}\left( \max_{p<10}a_{p} \right)" in lse
    assert "stop-gradient" in lse and "the largest value over p" in lse
    maxall = render.latex(dump.load(ROOT / "tests" / "data" / "maxall.json"))
    assert r"m &= \max_{p<1000}x_{p}" in maxall
    assert r"\left[ i=\operatorname*{arg\,max}_{p<1000}\left( x_{p} \right) \right]" in maxall
    page = render.html(dump.load(ROOT / "tests" / "data" / "maxpool.json"))
    assert "<mo>max</mo>" in page and "<mo>argmax</mo>" in page


def test_specific_renderings():
    """zero_but, backslide, div/mod, selb, imapb and ix_const, each as a paper writes it."""
    ops = render.latex(dump.load(ROOT / "tests" / "golden" / "dump" / "ops.json"))
    assert (r"\partial\mathrm{bs}_{i} &= \sum_{p<6}\sum_{q<3}\left[ 0\le p-q<4 \right]\left[ "
            r"i=p \right]\, \partial\mathrm{lm}_{p}\cdot c_{p-q}") in ops           # zero_but
    assert (r"\mathrm{bs}_{i} &= \sum_{p<3}\left[ 0\le i-p<4 \right]\, \sigma\left( c_{i-p} "
            r"\right)\cdot w_{p}") in ops                                          # backslide
    assert (r"m_{\left\lfloor i/3 \right\rfloor,\,i\bmod3}\cdot\left( -\mathrm{lm}_{3\left\lfloor"
            r" i/3 \right\rfloor+\left( i\bmod3 \right)} \right)") in ops          # imapb, selb
    assert (r"\left[ i=\left\lfloor p/3 \right\rfloor \right]\left[ j=p\bmod3 \right]") in ops
    pad = render.latex(dump.parse(dumpgen.pad_const_hand()))
    assert (r"p_{i,\,j} &= \left[ 0\le i-1<3 \right]\left[ 0\le j-1<4 \right]\, x_{i-1,\,j-1}"
            in pad)                                                                # ix_const


def test_sqrt_is_a_radical():
    """sqrt (tests/data/sqrt.json) as √ over its argument: ``\\sqrt{…}`` in LaTeX, ``msqrt`` in
    MathML, squared or inverted as a whole, and in the legend."""
    model = dump.load(ROOT / "tests" / "data" / "sqrt.json")
    tex = render.latex(model)
    assert r"r &= \sqrt{1+a\odot a}" in tex                                 # whole arrays
    assert r"q_{i} &= \sqrt{1+v_{i}^{2}}" in tex                             # an element
    assert (r"{\left( \sqrt{1+v_{i}^{2}}+\sqrt{1+v_{i}^{2}} \right)}^{-1}" in tex)  # sqrt′
    assert r"%   $\sqrt{x}$: the square root" in tex
    page = render.html(model)
    assert ("<msqrt><mrow><mn>1</mn><mo>+</mo><mi>a</mi><mo>⊙</mo><mi>a</mi></mrow></msqrt>"
            in page)
    assert "sqrt" not in math_text(page)
    # (√x)²: the radical is an atom, squared without parentheses
    square = render.Renderer(model).lay(rm.MPow(rm.MSqrt(rm.MArr("x")), 2))
    assert latex(square) == r"{\sqrt{x}}^{2}"


def test_long_right_hand_sides_are_broken():
    """A sum of many terms is written over several lines, each about LINE characters."""
    b = dumpgen.Builder("long")
    xs = [b.param(f"x{n}", 3) for n in range(12)]
    e = xs[0] * xs[1]
    for n in range(2, 12):
        e = e + xs[n] * xs[(n + 1) % 12]
    s = b.let("s", e)
    loss = b.let("loss", dumpgen.sum_(3, lambda i: s[i]))
    b.seed(loss, dumpgen.one(1))
    b.autodiff()
    model = dump.parse(b.build())
    eq = render.Renderer(model).equation("s", 3, model.arrays["s"].expr)
    assert len(eq.lines) >= 2
    assert all(width(line) <= render.LINE for line in eq.lines)
    assert r"&\quad +" in render.latex(model)
    assert '<mtr class="more">' in render.html(model)


# ------------------------------------------------------------------------------------------
# the command line


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "extract", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_writes_the_page_and_the_fragment(tmp_path, cnn):
    res = run_cli([str(CNN), "--html", "cnn.html", "--latex", "cnn.tex"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["wrote cnn.html", "wrote cnn.tex"]
    assert (tmp_path / "cnn.html").read_text(encoding="utf-8") == render.html(cnn)
    assert (tmp_path / "cnn.tex").read_text(encoding="utf-8") == render.latex(cnn)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cnn.html", "cnn.tex"]   # no C
    res = run_cli([str(CNN), "--latex", "-"], tmp_path)
    assert res.returncode == 0 and res.stdout == render.latex(cnn)
    assert render.default_path(cnn, "html") == Path("build") / "gen" / "cnn.html"   # under cwd


def test_cli_bad_dump(tmp_path):
    (tmp_path / "bad.json").write_text('{"format": "ad-expression-dump", "version": 9}')
    res = run_cli(["bad.json", "--html", "x.html"], tmp_path)
    assert res.returncode == 1 and res.stderr.startswith("error: $.version")
    assert not (tmp_path / "x.html").exists()


# ------------------------------------------------------------------------------------------
# the zoo (model files, through the Agda elaborator)


def agda_missing() -> str | None:
    exe = frontend.agda_main()
    return None if os.access(exe, os.X_OK) else f"no Agda executable at {exe} (make dump)"


@pytest.mark.agda
@pytest.mark.skipif(agda_missing() is not None, reason=str(agda_missing()))
@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_zoo_model_files_render(name, cnn):
    model = dump.parse(json.loads(frontend.compile_model(ROOT / "models" / f"{name}.model")))
    page = render.html(model)
    body_xml(page)
    text = render.latex(model)
    if name == "cnn":      # the same dump as the built-in CNN: the same formulas
        assert text.split("\n\n", 1)[1] == render.latex(cnn).split("\n\n", 1)[1]
    else:
        assert (r"z_{i}^{(1)} &= \sum_{p,\,q<28}w_{i,\,p,\,q}^{(1)}\cdot x_{p,\,q}+b_{i}^{(1)}"
                in text)
        assert r"\partial w_{i,\,j,\,k}^{(1)} &= \partial z_{i}^{(1)}\cdot x_{j,\,k}" in text


# ------------------------------------------------------------------------------------------
# the page in a browser

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/setup.sh --test "
                             "installs it with apt-get)")

# Measures the laid-out math: a copy of the page gets this script; the page users get has none.
PROBE = """<script>
const box = e => e.getBoundingClientRect();
const seen = r => r.width > 0 && r.height > 0;
const above = (a, b) => a.bottom <= b.top + 1 && a.left < b.right && b.left < a.right;
const pairs = (tag, ok) => [...document.querySelectorAll(tag)].map(e => {
  const a = box(e.children[0]), b = box(e.children[1]);
  return seen(a) && seen(b) && ok(a, b);
});
const out = {
  math: [...document.querySelectorAll("math")].map(m => [box(m).width, box(m).height]),
  mfrac: pairs("mfrac", (n, d) => above(n, d)),
  msub: pairs("msub", (b, s) => s.left >= b.right - 1 && s.bottom > b.bottom),
  munder: pairs("munder", (b, u) => above(b, u)),
};
const pre = document.createElement("pre");
pre.id = "probe";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>
"""


def chromium(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile{len(list(tmp_path.glob('profile*')))}"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--window-size=1200,2000", *args,
         url], capture_output=True, text=True, timeout=180)


@needs_chromium
def test_cnn_page_in_chromium(tmp_path, cnn):
    page = render.html(cnn)
    assert "<script" not in page
    (tmp_path / "cnn.html").write_text(page, encoding="utf-8")
    shot = tmp_path / "cnn.png"
    res = chromium((tmp_path / "cnn.html").as_uri(), tmp_path, f"--screenshot={shot}")
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]

    # the screenshot: 1200×2000, with text over the page (not a blank or a one-line image)
    Image = pytest.importorskip("PIL.Image", reason="Pillow (a dependency of matplotlib)")
    with Image.open(shot) as im:
        assert im.size == (1200, 2000)
        grey = np.asarray(im.convert("L"), dtype=np.float64)
    dark = grey < 128
    assert 0.005 < dark.mean() < 0.3, dark.mean()
    assert grey.std() > 20
    assert dark.any(axis=1).sum() > 400      # rows with ink, all down the page
    assert dark[1500:].any()                 # the page goes on past the forward bindings

    # the layout: every <math> has a box; fractions stacked, subscripts lowered, limits under
    (tmp_path / "probe.html").write_text(page.replace("</body>", PROBE + "</body>"),
                                         encoding="utf-8")
    res = chromium((tmp_path / "probe.html").as_uri(), tmp_path, "--dump-dom")
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S)
    assert m, res.stdout[-2000:]
    probe = json.loads(htmllib.unescape(m.group(1)))
    assert len(probe["math"]) == page.count("<math") >= 10
    assert all(w > 0 and h > 0 for w, h in probe["math"])
    for tag in ("mfrac", "msub", "munder"):
        assert len(probe[tag]) == page.count(f"<{tag}>") > 3, tag
        assert all(probe[tag]), (tag, probe[tag].count(False))

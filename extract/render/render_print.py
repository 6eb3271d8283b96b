"""The two printers of ``extract/render/render.py``: one math tree, printed as MathML and as LaTeX.

The renderer (``extract/render/render.py``) decides what to write; this module only decides how. Its
input is a ``Page`` of sections of equation rows whose formulas are trees of a handful of
presentation nodes (``Id``, ``Num``, ``Op``, ``Txt``, ``Row``, ``Sub``, ``Sup``, ``SubSup``,
``Frac``, ``Sqrt``, ``Fence``, ``Under``, ``Stack``, ``Space``), and each printer is one function
over that tree plus a page skeleton::

    Sub(Id("x"), Row((Id("i"), Op("+"), Id("p"))))
        mathml -> <msub><mi>x</mi><mrow><mi>i</mi><mo>+</mo><mi>p</mi></mrow></msub>
        latex  -> x_{i+p}

``html_page`` is one self-contained page (MathML Core, a few CSS rules, no script, nothing
fetched); ``latex_fragment`` is a piece of LaTeX (``amsmath``, ``amssymb``) with one ``align*``
per section. ``width`` estimates how wide a formula is, in characters, for line breaking.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Union


# ---------------------------------------------------------------------------------------------
# the math tree

@dataclass(frozen=True)
class Id:
    """An identifier: one letter is italic, a longer name upright (as MathML Core does)."""
    text: str


@dataclass(frozen=True)
class Num:
    text: str


@dataclass(frozen=True)
class Op:
    """An operator or a separator; ``big`` marks a large operator (Σ)."""
    text: str
    big: bool = False


@dataclass(frozen=True)
class Txt:
    text: str


@dataclass(frozen=True)
class Row:
    items: tuple


@dataclass(frozen=True)
class Sub:
    base: "Prim"
    sub: "Prim"


@dataclass(frozen=True)
class Sup:
    base: "Prim"
    sup: "Prim"


@dataclass(frozen=True)
class SubSup:
    base: "Prim"
    sub: "Prim"
    sup: "Prim"


@dataclass(frozen=True)
class Frac:
    num: "Prim"
    den: "Prim"


@dataclass(frozen=True)
class Sqrt:
    """A square root: the radical sign over its body (``√x``)."""
    body: "Prim"


@dataclass(frozen=True)
class Fence:
    """Brackets that grow with their content: ``(…)``, ``[…]``, ``⌊…⌋``."""
    open: str
    body: "Prim"
    close: str


@dataclass(frozen=True)
class Under:
    """A large operator with its limits below (``Σ`` over its ranges)."""
    base: "Prim"
    under: "Prim"


@dataclass(frozen=True)
class Stack:
    """Lines stacked (the ranges under a Σ of several variables)."""
    rows: tuple


@dataclass(frozen=True)
class Space:
    em: float


Prim = Union[Id, Num, Op, Txt, Row, Sub, Sup, SubSup, Frac, Sqrt, Fence, Under, Stack, Space]


def row(*items) -> Prim:
    """A row of its items, flattening nested rows; one item is returned as it is."""
    flat = []
    for x in items:
        if isinstance(x, Row):
            flat.extend(x.items)
        elif x is not None:
            flat.append(x)
    return flat[0] if len(flat) == 1 else Row(tuple(flat))


# ---------------------------------------------------------------------------------------------
# the page

@dataclass(frozen=True)
class Eq:
    """One displayed row: ``lhs rel lines[0]`` (more lines continue the right-hand side),
    with an optional note on the right (a shape, a role)."""
    lhs: Prim
    rel: str
    lines: tuple
    note: Prim | None = None


@dataclass(frozen=True)
class Section:
    title: str
    text: str
    rows: tuple


@dataclass(frozen=True)
class Page:
    title: str
    about: str
    legend: tuple          # (Prim, str): a symbol and what it means
    sections: tuple


# ---------------------------------------------------------------------------------------------
# width (in characters, roughly), for line breaking

def width(p: Prim) -> float:
    if isinstance(p, (Id, Num, Txt)):
        return len(p.text)
    if isinstance(p, Op):
        return 2.5 if p.big else len(p.text) + 0.6
    if isinstance(p, Row):
        return sum(width(x) for x in p.items)
    if isinstance(p, Sub):
        return width(p.base) + 0.7 * width(p.sub)
    if isinstance(p, Sup):
        return width(p.base) + 0.7 * width(p.sup)
    if isinstance(p, SubSup):
        return width(p.base) + 0.7 * max(width(p.sub), width(p.sup))
    if isinstance(p, Frac):
        return max(width(p.num), width(p.den)) + 0.4
    if isinstance(p, Sqrt):
        return width(p.body) + 1.2
    if isinstance(p, Fence):
        return width(p.body) + 1.2
    if isinstance(p, Under):
        return max(width(p.base), 0.7 * width(p.under)) + 0.4
    if isinstance(p, Stack):
        return max((width(x) for x in p.rows), default=0)
    if isinstance(p, Space):
        return p.em * 1.8
    raise TypeError(type(p).__name__)


# ---------------------------------------------------------------------------------------------
# MathML

def mathml(p: Prim) -> str:
    e = html.escape
    if isinstance(p, Id):
        return f"<mi>{e(p.text)}</mi>"
    if isinstance(p, Num):
        return f"<mn>{e(p.text)}</mn>"
    if isinstance(p, Op):
        if p.big:
            return f'<mo class="big" movablelimits="false">{e(p.text)}</mo>'
        if p.text == ",":
            return '<mo separator="true">,</mo>'
        return f"<mo>{e(p.text)}</mo>"
    if isinstance(p, Txt):
        return f"<mtext>{e(p.text)}</mtext>"
    if isinstance(p, Row):
        return "<mrow>" + "".join(mathml(x) for x in p.items) + "</mrow>"
    if isinstance(p, Sub):
        return f"<msub>{mathml(p.base)}{mathml(p.sub)}</msub>"
    if isinstance(p, Sup):
        return f"<msup>{mathml(p.base)}{mathml(p.sup)}</msup>"
    if isinstance(p, SubSup):
        return f"<msubsup>{mathml(p.base)}{mathml(p.sub)}{mathml(p.sup)}</msubsup>"
    if isinstance(p, Frac):
        return f"<mfrac>{mathml(p.num)}{mathml(p.den)}</mfrac>"
    if isinstance(p, Sqrt):
        return f"<msqrt>{mathml(p.body)}</msqrt>"
    if isinstance(p, Fence):
        return (f"<mrow><mo>{e(p.open)}</mo>{mathml(p.body)}<mo>{e(p.close)}</mo></mrow>")
    if isinstance(p, Under):
        return f"<munder>{mathml(p.base)}{mathml(p.under)}</munder>"
    if isinstance(p, Stack):
        return ("<mtable>" + "".join(f"<mtr><mtd>{mathml(x)}</mtd></mtr>" for x in p.rows)
                + "</mtable>")
    if isinstance(p, Space):
        return f'<mspace width="{p.em:g}em"></mspace>'
    raise TypeError(type(p).__name__)


CSS = """\
body { font-family: "STIX Two Text", "Latin Modern Roman", "DejaVu Serif", serif;
       max-width: 72em; margin: 1.5em auto; padding: 0 1.5em; line-height: 1.4; color: #111; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
math { font-family: "STIX Two Math", "Latin Modern Math", "DejaVu Math TeX Gyre", math;
       font-size: 1.15em; }
math[display="block"] { margin: 0.6em 0; overflow-x: auto; }
mtable.eqs > mtr > mtd { padding: 0.35em 0.15em; }
mtable.eqs > mtr > mtd.lhs { text-align: right; text-align: -webkit-right; }
mtable.eqs > mtr > mtd.rhs, mtable.eqs > mtr > mtd.note { text-align: left; text-align: -webkit-left; }
mtable.eqs > mtr > mtd.note { padding-left: 2.5em; color: #555; }
mtable.eqs > mtr.more > mtd { padding-top: 0; }
mo.big { font-size: 1.5em; }
ul.legend li { margin: 0.2em 0; }
code { font-size: 0.95em; }
"""


def _mtable(rows) -> str:
    out = ['<math display="block"><mtable class="eqs" displaystyle="true" '
           'columnalign="right center left left">']
    for r in rows:
        note = f'<mtd class="note">{mathml(r.note)}</mtd>' if r.note is not None else \
            '<mtd class="note"></mtd>'
        out.append(f'<mtr><mtd class="lhs">{mathml(r.lhs)}</mtd><mtd class="rel">'
                   f'{mathml(Op(r.rel))}</mtd><mtd class="rhs">{mathml(r.lines[0])}</mtd>'
                   f'{note}</mtr>')
        for line in r.lines[1:]:
            out.append('<mtr class="more"><mtd class="lhs"></mtd><mtd class="rel"></mtd>'
                       f'<mtd class="rhs">{mathml(row(Space(1.5), line))}</mtd>'
                       '<mtd class="note"></mtd></mtr>')
    out.append("</mtable></math>")
    return "\n".join(out)


def html_page(page: Page) -> str:
    """One self-contained HTML page: MathML, inline CSS, no script, nothing fetched."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{e(page.title)}</title>", f"<style>\n{CSS}</style>", "</head>", "<body>",
             f"<h1>{e(page.title)}</h1>", f"<p>{_inline(page.about)}</p>"]
    if page.legend:
        parts.append("<h2>Notation</h2>")
        parts.append('<ul class="legend">')
        for sym, text in page.legend:
            parts.append(f"<li><math>{mathml(sym)}</math> {_inline(text)}</li>")
        parts.append("</ul>")
    for s in page.sections:
        parts.append(f"<h2>{e(s.title)}</h2>")
        if s.text:
            parts.append(f"<p>{_inline(s.text)}</p>")
        if s.rows:
            parts.append(_mtable(s.rows))
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _inline(text: str) -> str:
    """Plain text with ``code`` spans (backquotes), as in the section texts."""
    pieces = text.split("`")
    return "".join(f"<code>{html.escape(x)}</code>" if n % 2 else html.escape(x)
                   for n, x in enumerate(pieces))


# ---------------------------------------------------------------------------------------------
# LaTeX

_TEX_SYMBOLS = {
    "σ": r"\sigma", "∂": r"\partial", "ℝ": r"\mathbb{R}", "∑": r"\sum", "·": r"\cdot",
    "⊙": r"\odot", "≤": r"\le", "−": "-", "×": r"\times", "∈": r"\in", "mod": r"\bmod",
    "⌊": r"\lfloor", "⌋": r"\rfloor", "′": "'", "″": "''", ",": r",\,", "/": "/",
    "∧": r"\wedge", "<": "<", "=": "=", "+": "+", "(": "(", ")": ")", "[": "[", "]": "]",
    "exp": r"\exp", "log": r"\log",
}
_TEX_ESCAPES = {"_": r"\_", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "{": r"\{",
                "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                "\\": r"\textbackslash{}"}


def tex_text(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(c, c) for c in text)


def _tex_ident(text: str) -> str:
    if text in _TEX_SYMBOLS:
        return _TEX_SYMBOLS[text]
    base = text.rstrip("′″")
    primes = "'" * (len(text) - len(base)) if base != text else ""
    if base != text:
        return _tex_ident(base) + primes
    if len(text) == 1 and text.isascii():
        return text
    return r"\mathrm{" + tex_text(text) + "}"


_TEX_OPERATORS = {"max": r"\max", "argmax": r"\operatorname*{arg\,max}"}   # under limits


def _tex_op(text: str) -> str:
    if text in _TEX_OPERATORS:
        return _TEX_OPERATORS[text]
    if text in _TEX_SYMBOLS:
        return _TEX_SYMBOLS[text]
    return r"\mathbin{\mathrm{" + tex_text(text) + "}}" if text.isalpha() else tex_text(text)


def latex(p: Prim) -> str:
    if isinstance(p, Id):
        return _tex_ident(p.text)
    if isinstance(p, Num):
        return p.text
    if isinstance(p, Op):
        return _tex_op(p.text)
    if isinstance(p, Txt):
        return r"\text{" + tex_text(p.text) + "}"
    if isinstance(p, Row):
        out = ""
        for x in p.items:
            t = latex(x)
            if out[-1:].isalpha() and t[:1].isalpha():   # \cdot x, not \cdotx
                out += " "
            out += t
        return out
    if isinstance(p, Sub):
        return f"{_tex_base(p.base)}_{{{latex(p.sub)}}}"
    if isinstance(p, Sup):
        return f"{_tex_base(p.base)}^{{{latex(p.sup)}}}"
    if isinstance(p, SubSup):
        return f"{_tex_base(p.base)}_{{{latex(p.sub)}}}^{{{latex(p.sup)}}}"
    if isinstance(p, Frac):
        return rf"\frac{{{latex(p.num)}}}{{{latex(p.den)}}}"
    if isinstance(p, Sqrt):
        return rf"\sqrt{{{latex(p.body)}}}"
    if isinstance(p, Fence):
        return (rf"\left{_tex_fence(p.open)} {latex(p.body)} \right{_tex_fence(p.close)}")
    if isinstance(p, Under):
        return f"{latex(p.base)}_{{{latex(p.under)}}}"
    if isinstance(p, Stack):
        return r"\substack{" + r" \\ ".join(latex(x) for x in p.rows) + "}"
    if isinstance(p, Space):
        return r"\quad " if p.em >= 1 else r"\, "
    raise TypeError(type(p).__name__)


def _tex_base(p: Prim) -> str:
    t = latex(p)
    return t if isinstance(p, (Id, Num)) else "{" + t + "}"


def _tex_fence(c: str) -> str:
    return {"⌊": r"\lfloor", "⌋": r"\rfloor", "[": "[", "]": "]", "(": "(", ")": ")"}[c]


def latex_fragment(page: Page) -> str:
    """LaTeX to paste into a paper (needs ``amsmath`` and ``amssymb``): a comment with the
    title and the notation, then per section a ``\\paragraph`` and an ``align*``."""
    out = [f"% {page.title}", f"% {page.about.replace('`', '')}",
           "% needs \\usepackage{amsmath,amssymb}"]
    if page.legend:
        out.append("% Notation:")
        for sym, text in page.legend:
            out.append(f"%   ${latex(sym)}$: {text.replace('`', '')}")
    for s in page.sections:
        out.append("")
        out.append(rf"\paragraph{{{tex_text(s.title)}.}}")
        if s.text:
            out.append(_tex_inline(s.text))
        if not s.rows:
            continue
        out.append(r"\begin{align*}")
        lines = []
        for r in s.rows:
            note = f" && {latex(r.note)}" if r.note is not None else ""
            lines.append(f"  {latex(r.lhs)} &{_tex_op(r.rel)} {latex(r.lines[0])}{note}")
            for more in r.lines[1:]:
                lines.append(rf"  &\quad {latex(more)}")
        out.append(" \\\\\n".join(lines))
        out.append(r"\end{align*}")
    return "\n".join(out) + "\n"


def _tex_inline(text: str) -> str:
    pieces = text.split("`")
    return "".join(r"\texttt{" + tex_text(x) + "}" if n % 2 else tex_text(x)
                   for n, x in enumerate(pieces))

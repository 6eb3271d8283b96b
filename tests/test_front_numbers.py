"""Numbers in a model file (docs/model-format.md §3, "Numbers"; Spec/Front/Literal.agda): a
whole number or a decimal (``0.044715``, ``1e-5``, ``2.5e3``) is, in the dump, a tree of ``one``,
``+`` and ``*`` under ``scaledown`` by a power of ten: exactly the number written (evaluated
here with ``fractions.Fraction``). The generated C folds the whole number and computes the
number correctly rounded in double precision (and in float32 for 7 digits and 10 places); the
field validation passes a model with a large power of ten; numbers past the bounds, and the
places where a number cannot go, are one-line errors naming the line and the binding.
"""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from conftest import elaborate_text

pytestmark = pytest.mark.agda


@pytest.fixture(scope="module")
def main(agda_main):
    return agda_main


elaborate = elaborate_text


def exact(node: dict) -> Fraction | None:
    """The value of a closed array expression of ``one``, ``zero``, ``bin`` plus/mul,
    ``scaledown`` and ``minus`` (a number's term), or None where it is anything else."""
    op = node["op"]
    if op in ("one", "zero"):
        return Fraction(op == "one")
    if op == "bin" and node["fn"] in ("plus", "mul"):
        a, b = exact(node["a"]), exact(node["b"])
        if a is None or b is None:
            return None
        return a + b if node["fn"] == "plus" else a * b
    if op == "scaledown":
        a = exact(node["a"])
        return None if a is None else a / node["n"]
    if op == "minus":
        a = exact(node["a"])
        return None if a is None else -a
    return None


def closed_terms(node: dict) -> list[tuple[Fraction, dict]]:
    """Every largest closed subterm of ``node`` (its value, the subterm)."""
    v = exact(node)
    if v is not None:
        return [(v, node)]
    return [t for k, c in node.items() if isinstance(c, dict) and "op" in c
            for t in closed_terms(c)]


def ops(node: dict) -> set:
    out = {node["op"]}
    for c in node.values():
        if isinstance(c, dict) and "op" in c:
            out |= ops(c)
    return out


NUMBERS = ["1e-5", "0.044715", "2.5e3", "1.59576912160573", "0.50", "7", "1E+2", "0.1",
           "9007199254740991", "1e-18", "123.456e-7", "0.000001", "3.14159265358979"]


@pytest.mark.parametrize("text", NUMBERS)
def test_a_number_is_exact_in_the_dump(main, text):
    """``x * NUMBER``: the dump's one closed subterm is the number, exactly; it is made of
    ``one``, ``+`` and ``*`` only, under one ``scaledown`` by a power of ten with no factor of
    10 left in the whole number (``0.50`` is ``5 / 10``), or none for a whole number."""
    r = elaborate(main, f"model n\ninput x : 3\nh = x * {text}\nloss l = sum i : 3 . h[i]\n")
    assert r.returncode == 0, r.stderr
    expr = json.loads(r.stdout)["chain"][0]["expr"]
    (value, term), = closed_terms(expr)
    assert value == Fraction(text)
    assert ops(term) <= {"one", "bin", "scaledown"}
    if term["op"] == "scaledown":
        n, whole = term["n"], exact(term["a"])
        assert n == 10 ** (len(str(n)) - 1) and whole.denominator == 1 and whole % 10 != 0
        assert "scaledown" not in ops(term["a"])
    else:
        assert value.denominator == 1


def test_zero_in_any_spelling_is_zero(main):
    r = elaborate(main, "model n\ninput x : 3\nh = x * 0e-40 + x * 0.0\nloss l = sum i : 3 . h[i]\n")
    assert r.returncode == 0, r.stderr
    expr = json.loads(r.stdout)["chain"][0]["expr"]
    assert [v for v, _ in closed_terms(expr)] == [0, 0]


def nearest_float32(q: Fraction) -> np.float32:
    """The float32 nearest to q (ties to even), from the float32 around float(q)."""
    f = np.float32(float(q))
    near = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(near, key=lambda c: (abs(Fraction(float(c)) - q), int(c.view(np.uint32)) & 1))


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_the_generated_c_computes_the_numbers_correctly_rounded(main, kernel_cache, precision):
    """The gradient of ``Σ w_k · N_k`` with respect to each ``w_k`` is the number ``N_k`` as the
    generated C computes it: in double precision, Python's ``float(N_k)`` (the nearest double),
    every number; in float32, the nearest float for the numbers of at most 7 significant digits
    and 10 decimal places (docs/model-format.md §3)."""
    import runtime
    f32 = ["1e-5", "0.044715", "2.5e3", "0.50", "7", "0.1", "123.456e-7", "0.000001",
           "3.141593", "1e-10"]
    if precision == "f64":
        # and a product of two numbers past 2^63, computed in the real type, not in C's long
        numbers = [(t, float(t)) for t in NUMBERS] + [("(3e15 * 3e15)", 3e15 * 3e15)]
    else:
        numbers = [(t, nearest_float32(Fraction(t))) for t in f32]
    decls = "".join(f"param w{k} : 1\n" for k in range(len(numbers)))
    terms = " + ".join(f"w{k} * {t}" for k, (t, _) in enumerate(numbers))
    text = f"model nums\n{decls}h = {terms}\nloss l = sum i : 1 . h[i]\n"
    m = runtime.load(text, precision=precision)
    _, g = m.loss_and_gradients()
    for k, (t, want) in enumerate(numbers):
        assert g[f"w{k}"].tobytes() == np.array([want], g[f"w{k}"].dtype).tobytes(), t


def test_the_c_folds_a_number_and_casts_one_past_int(main, tmp_path):
    """The C writes ``0.044715`` as ``(real)44715 / 1000000``, not as the tree of ones; a whole
    number past C's int (here 123456789012345) is cast to the real type, so no int arithmetic
    overflows."""
    from extract.emit.sources import generate
    from extract.ir import dump
    text = ("model fold\ninput x : 3\ntarget t : 3\n"
            "output p = x * 0.044715 + x * 0.123456789012345 + x * 3000000000\n"
            "loss l = sqerr(p, t)\n")
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    c = generate(dump.parse(json.loads(r.stdout)), "f64").files["model_fold.c"]
    assert "(real)44715 / 1000000" in c and "1 + 1" not in c
    assert "(real)123456789012345 / 1000000000000000" in c
    assert "(real)3000000000" in c


def test_the_field_validation_passes_numbers_with_large_powers_of_ten(main, kernel_cache,
                                                                       tmp_path):
    """Every kernel emitted for a model with ``1e-18`` (``scaledown`` by 10^18, past the field
    header's cache of small divisors) and a 15-digit number equals the dump over F_p."""
    from test_front import validates
    text = ("model big\ninput x : 4\ntarget t : 4\nparam w : 4\n"
            "h = for i : 4 . w[i] * x[i] * 0.123456789012345 + 1e-18\n"
            "output p = logistic(h)\nloss l = sqerr(p, t)\n")
    (tmp_path / "big.model").write_text(text)
    validates(tmp_path / "big.model", tmp_path / "g")


@pytest.mark.parametrize("rhs, says", [
    ("sum i : 3 . x[i] * 1e-19", "binding l: the number 1e-19 has 19 decimal places; at most 18 "
     "are exact in the generated code (it divides by 10^19, past 64-bit integers): declare it a "
     "const and give its value with the weights"),
    ("sum i : 3 . x[i] * 0.12345678901234567", "binding l: the number 0.12345678901234567 has "
     "more significant digits than a double holds exactly (its digits 12345678901234567 reach "
     "2^53 = 9007199254740992): write at most 15 of them"),
    ("sum i : 3 . x[i] * 1e16", "binding l: the number 1e16 is 2^53 = 9007199254740992 or more, "
     "past the whole numbers a double holds exactly"),
    ("sum i : 3 . x[i] * 9007199254740992", "binding l: the number 9007199254740992 is 2^53"),
    ("sum i : 3 . x[i] * 1e99999999999", "binding l: the number 1e99999999999 is 2^53"),
    ("sum i : 3 . x[i] * 1e-99999999999",
     "binding l: the number 1e-99999999999 has 99999999999 decimal places"),
    ("0.5", "binding l: the shape of a number is not known here: use it beside an array (as in "
            "x * 1 or x + 0.5)"),
    ("sum i : 3 . x[i] * .5", "expected an expression, found '.': a decimal number starts with "
                              "a digit (0.5, not .5)"),
    ("sum i : 3 . x[0.5]", "binding l: [0.5]: an index is an index variable"),
    ("sum i : 3 . (x / 2.5)[i]", "expected a positive whole number after '/', found 2.5"),
    ("logsumexp(2.5)", "binding l: logsumexp: argument 1 is the number 2.5; a layer takes "
                       "arrays (a number in one, as x * 2.5, takes its shape) and whole numbers"),
])
def test_numbers_out_of_bounds_and_out_of_place_are_one_line_errors(main, rhs, says):
    r = elaborate(main, f"model m\ninput x : 3\nloss l = {rhs}\n")
    assert r.returncode == 1 and r.stdout == "", r.stderr
    line, = r.stderr.strip().splitlines()
    assert line.startswith("-:3: ") and says in line, line


def test_a_shape_before_a_point_and_digits_is_now_a_decimal(main):
    """``for i : 3.1`` reads the decimal 3.1 where the shape should be (docs/model-format.md
    §7); with spaces, ``for i : 3 . 1``, the body is the number 1."""
    r = elaborate(main, "model m\ninput x : 3\nloss l = sum i : 3.1\n")
    assert r.returncode == 1 and "expected a shape (such as 28x28), found 3.1" in r.stderr
    assert elaborate(main, "model m\ninput x : 3\nloss l = sum i : 3 . x[i] * 1\n").returncode == 0


def test_names_beside_numbers_are_still_names(main):
    """``e`` and ``E`` are names unless digits follow them right after a number's digits:
    ``2e-1`` is 0.2, ``e[i] * 2`` a name times 2, ``sum i : 3 . e[i]`` a binder's body."""
    text = ("model m\ninput e : 3\ntarget E : 3\n"
            "h = for i : 3 . e[i] * 2e-1 + E[i] * 2\n"
            "loss l = sum i : 3 . e[i] - h[i]\n")
    r = elaborate(main, text)
    assert r.returncode == 0, r.stderr
    expr = json.loads(r.stdout)["chain"][0]["expr"]
    assert sorted(v for v, _ in closed_terms(expr)) == [Fraction(1, 5), 2]


def test_a_number_counts_its_depth_in_the_nesting_limit(main):
    """180 nested ``relu`` around ``x[i] * 2`` fit the 200 levels; around a 14-digit number
    (a term 71 levels deep: 44 binary digits) they do not, and the message is the nesting one."""
    def text(number: str) -> str:
        return ("model m\ninput x : 3\nloss l = sum i : 3 . " + "relu(" * 180 + f"x[i] * {number}"
                + ")" * 180 + "\n")
    assert elaborate(main, text("2")).returncode == 0
    r = elaborate(main, text("0.12345678901234"))
    assert r.returncode == 1 and "3: binding l: nesting deeper than 200 levels" in r.stderr


def test_the_builder_writes_python_numbers(main, kernel_cache):
    """``ModelBuilder``: a Python number is a number of the model file, written as ``repr``
    writes it (``1e-05``), a negative one with its minus; a float whose shortest decimal has
    17 significant digits is refused by the elaborator, naming it."""
    from runtime.builder import ModelBuilder
    from extract.front.frontend import ModelError
    b = ModelBuilder("nb")
    x, y = b.input("x", 3), b.target("y", 3)
    out = b.output(x * 0.5 + 1e-5 - x * -2 + 3, "out")
    b.loss(b.sqerr(out, y))
    assert "output out = x * 0.5 + 1e-05 - x * (-2) + 3" in b.text().splitlines(), b.text()
    d = json.loads(b.compile())
    values = {v for v, _ in closed_terms(d["chain"][0]["expr"])}
    assert {Fraction(1, 2), Fraction(1, 100000), 3} <= values, values
    with pytest.raises(TypeError, match="not an expression"):
        x * "0.5"
    with pytest.raises(ValueError, match="not a number of a model file: inf"):
        x * float("inf")
    b2 = ModelBuilder("nb2")
    x2, y2 = b2.input("x", 3), b2.target("y", 3)
    b2.loss(b2.sqerr(b2.output(x2 * (0.1 + 0.2), "out"), y2))
    with pytest.raises(ModelError, match="the number 0.30000000000000004 has more significant"):
        b2.compile()

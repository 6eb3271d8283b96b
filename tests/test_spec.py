"""The Agda specification (Spec/) and the expression dumps it prints.

- the proof check: Spec/Everything.agda type-checks, imports every module, and no module uses an
  escape hatch (postulate, hole, termination pragma, trustMe) or lacks --safe --without-K;
- the dumps (cnn, dot, chain, ops) printed by the compiled Spec/Main.agda validate against the
  schema and the oracle's shape checker, and equal the golden files (``--update-golden``
  rewrites those);
- what the dumps compute, evaluated by the independent NumPy oracle (tests/oracle.py): the dot
  and chain gradients against their closed forms, the CNN's and the ops model's parameter
  gradients against finite differences of the loss (ops: every constructor with a derivative), and the CNN's forward pass against the array-level
  `forward` of Spec/CNN/Array.agda as run by ``Main check-forward``;
- the command line: an unknown model lists the known ones and exits non-zero.

The executable and the dumps are built by scripts/build-dump.sh (build/agda/Main,
build/dump/*.json), which does nothing when they are newer than every Spec source, so a test
run after ``make dump`` reuses them.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import oracle

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "Spec"
GOLDEN = ROOT / "tests" / "golden" / "dump"
SCHEMA = ROOT / "docs" / "dump-format.schema.json"
STDLIB = "/usr/share/agda-stdlib"
MODELS = ("cnn", "dot", "chain", "ops")
SAFE_LINE = "{-# OPTIONS --safe --without-K #-}"

needs_agda = pytest.mark.skipif(shutil.which("agda") is None, reason="agda is not installed")

CNN_CONTEXT = [("target", [10, [1, [1, [1, 1]]]], "input"),
               ("inp", [28, 28], "input"),
               ("k1", [6, [5, 5]], "param"),
               ("b1", 6, "param"),
               ("k2", [12, [6, [5, 5]]], "param"),
               ("b2", 12, "param"),
               ("fc", [10, [12, [1, [4, 4]]]], "param"),
               ("b", 10, "param")]
CNN_CHAIN = [("c11", [6, [24, 24]]), ("c1", [6, [24, 24]]), ("s1", [6, [12, 12]]),
             ("c21", [12, [1, [8, 8]]]), ("c2", [12, [1, [8, 8]]]),
             ("s2", [12, [1, [4, 4]]]), ("r1", [10, [1, [1, [1, 1]]]]),
             ("r", [10, [1, [1, [1, 1]]]]), ("loss", 1)]


# ------------------------------------------------------------------------------------------
# Source hygiene (no Agda needed)
# ------------------------------------------------------------------------------------------

def spec_modules() -> list[Path]:
    return sorted(SPEC.rglob("*.agda"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def strip_comments(text: str) -> str:
    """Agda source without comments (line comments and {- -} blocks, nested), keeping pragmas
    {-# #-} and holes {! !}."""
    out, i, depth = [], 0, 0
    while i < len(text):
        if text.startswith("{-#", i) and depth == 0:
            j = text.index("#-}", i) + 3
            out.append(text[i:j])
            i = j
        elif text.startswith("{-", i):
            depth += 1
            i += 2
        elif depth and text.startswith("-}", i):
            depth -= 1
            i += 2
        elif depth:
            i += 1
        elif text.startswith("--", i) and (i == 0 or not _name_char(text[i - 1])):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _name_char(c: str) -> bool:
    # "--" starts a comment unless it continues a name (as in a--b)
    return not (c.isspace() or c in "(){};\"")


FORBIDDEN = [r"\bpostulate\b", r"\{!", r"\bTERMINATING\b", r"\bNON_TERMINATING\b",
             r"\bNO_TERMINATION_CHECK\b", r"\btrustMe\b", r"primTrustMe", r"\bBUILTIN\b",
             r"--type-in-type", r"--no-positivity-check", r"--allow-unsolved-metas",
             r"\bNO_POSITIVITY_CHECK\b", r"\bNO_UNIVERSE_CHECK\b"]


def test_strip_comments_keeps_code_and_pragmas():
    src = "{-# OPTIONS --safe #-}\nx = 1 -- postulate\n{- a {- postulate -} b -}\ny = {! !}\n"
    out = strip_comments(src)
    assert "postulate" not in out
    assert "{-# OPTIONS --safe #-}" in out and "x = 1" in out and "{!" in out


@pytest.mark.parametrize("pattern", FORBIDDEN)
def test_no_escape_hatches(pattern):
    offenders = [str(p.relative_to(ROOT)) for p in spec_modules()
                 if re.search(pattern, strip_comments(p.read_text()))]
    assert not offenders, f"{pattern} in {offenders}"


def test_every_module_but_main_is_safe():
    mods = spec_modules()
    assert mods, "no Spec modules"
    for p in mods:
        first = p.read_text().splitlines()[0].strip()
        if p == SPEC / "Main.agda":
            assert "--safe" not in first
        else:
            assert first == SAFE_LINE, f"{p.relative_to(ROOT)}: first line is {first!r}"


def test_everything_imports_every_module():
    """The proof check (Spec/Everything.agda) covers every module but the executable."""
    text = strip_comments((SPEC / "Everything.agda").read_text())
    imported = set(re.findall(r"^\s*(?:open\s+)?import\s+(\S+)", text, re.M))
    expected = {module_name(p) for p in spec_modules()} - {"Spec.Main", "Spec.Everything"}
    assert expected - imported == set(), "not imported by Spec/Everything.agda"


# ------------------------------------------------------------------------------------------
# Proof check and builds (Agda needed)
# ------------------------------------------------------------------------------------------

@needs_agda
@pytest.mark.agda
def test_everything_typechecks():
    """Agda checks Spec/Everything.agda. `make test` has just done so (its prerequisite `make
    proofs`, which says PK_PROOFS_CHECKED=1 to the tests): then every module's interface must
    be newer than its source (Agda writes one only for a module it accepted), and loading them
    all again (a minute of CPU) is skipped."""
    if os.environ.get("PK_PROOFS_CHECKED") == "1":
        stale = [str(p.relative_to(ROOT)) for p in spec_modules()
                 if p.name != "Main.agda" and not (p.with_suffix(".agdai").exists() and
                                                   p.with_suffix(".agdai").stat().st_mtime_ns
                                                   >= p.stat().st_mtime_ns)]
        if not stale:
            return
    r = subprocess.run(["agda", "-i", STDLIB, "-i", ".", "Spec/Everything.agda"], cwd=ROOT,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]


@pytest.fixture(scope="session")
def spec_binary() -> Path:
    if shutil.which("agda") is None:
        pytest.skip("agda is not installed")
    r = subprocess.run([str(ROOT / "scripts" / "build-dump.sh")], cwd=ROOT,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return ROOT / "build" / "agda" / "Main"


@pytest.fixture(scope="session")
def dumps(spec_binary) -> dict[str, dict]:
    return {m: json.loads((ROOT / "build" / "dump" / f"{m}.json").read_text()) for m in MODELS}


@pytest.fixture(scope="session")
def check_forward(spec_binary) -> dict:
    """Main check-forward's output (cached in build/dump/check-forward.json by the script)."""
    r = subprocess.run([str(ROOT / "scripts" / "build-dump.sh"), "--check-forward"], cwd=ROOT,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return json.loads((ROOT / "build" / "dump" / "check-forward.json").read_text())


# ------------------------------------------------------------------------------------------
# The dumps
# ------------------------------------------------------------------------------------------

@pytest.mark.agda
@pytest.mark.parametrize("model", MODELS)
def test_dump_validates(dumps, model):
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.exists():
        pytest.skip("docs/dump-format.schema.json not written yet")
    jsonschema.validate(dumps[model], json.loads(SCHEMA.read_text()))
    oracle.check_shapes(dumps[model])
    assert dumps[model]["model"] == model


@pytest.mark.agda
@pytest.mark.parametrize("model", MODELS)
def test_dump_golden(dumps, model, update_golden):
    path = GOLDEN / f"{model}.json"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dumps[model], indent=1) + "\n")
    assert path.exists(), f"{path} missing: run pytest with --update-golden"
    assert json.loads(path.read_text()) == dumps[model], \
        f"dump of {model} differs from {path.relative_to(ROOT)}"


def param_names(dump):
    return [c["name"] for c in dump["context"] if c["role"] == "param"]


@pytest.mark.agda
@pytest.mark.parametrize("model", MODELS)
def test_gradients_follow_the_chain(dumps, model):
    """§2: one gradient per binding, last first, then exactly one per param in context order."""
    d = dumps[model]
    chain = [b["name"] for b in d["chain"]]
    grads = [(g["name"], g["wrt"]) for g in d["gradients"]]
    assert grads == [("d_" + b, b) for b in reversed(chain)] + \
        [("d_" + p, p) for p in param_names(d)]
    shapes = {c["name"]: c["shape"] for c in d["context"]} | \
        {b["name"]: b["shape"] for b in d["chain"]}
    for g in d["gradients"]:
        assert g["shape"] == shapes[g["wrt"]]
    assert d["seed"]["of"] == chain[-1]


@pytest.mark.agda
def test_cnn_dump_structure(dumps):
    d = dumps["cnn"]
    assert d["format"] == "ad-expression-dump" and d["version"] == 5
    assert [(c["name"], c["shape"], c["role"]) for c in d["context"]] == CNN_CONTEXT
    assert [(b["name"], b["shape"]) for b in d["chain"]] == CNN_CHAIN
    assert d["seed"] == {"of": "loss", "expr": {"op": "one", "sort": "ar", "shape": 1}}
    assert d["outputs"] == {"prediction": "r", "loss": "loss"}
    params = [g["wrt"] for g in d["gradients"] if g["wrt"] in param_names(d)]
    assert params == ["k1", "b1", "k2", "b2", "fc", "b"]


def _random_context(dump, rng, scale=0.5):
    return {c["name"]: rng.uniform(-scale, scale, oracle.leaves(c["shape"]))
            for c in dump["context"]}


@pytest.mark.agda
def test_dot_gradients(dumps):
    d = dumps["dot"]
    assert [c["name"] for c in d["context"]] == ["seed", "a", "b"]
    rng = np.random.default_rng(1)
    ctx = _random_context(d, rng)
    out = oracle.evaluate(d, ctx)
    seed = ctx["seed"][0]
    np.testing.assert_allclose(out["r"], [ctx["a"] @ ctx["b"]], rtol=1e-14)
    np.testing.assert_allclose(out["d_r"], [seed], rtol=0)
    np.testing.assert_allclose(out["d_a"], seed * ctx["b"], rtol=1e-14)
    np.testing.assert_allclose(out["d_b"], seed * ctx["a"], rtol=1e-14)


@pytest.mark.agda
def test_chain_gradients(dumps):
    d = dumps["chain"]
    rng = np.random.default_rng(2)
    ctx = _random_context(d, rng, scale=2.0)
    a, b = ctx["a"], ctx["b"]
    out = oracle.evaluate(d, ctx)
    np.testing.assert_allclose(out["x"], a * b, rtol=1e-14)
    np.testing.assert_allclose(out["y"], (a * b) ** 2, rtol=1e-14)
    np.testing.assert_allclose(out["d_a"], 2 * a * b ** 2, rtol=1e-13)
    np.testing.assert_allclose(out["d_b"], 2 * b * a ** 2, rtol=1e-13)


@pytest.mark.agda
def test_cnn_gradients_match_finite_differences(dumps):
    """Central differences of the loss along a random direction, per parameter (float64)."""
    d = dumps["cnn"]
    rng = np.random.default_rng(3)
    ctx = _random_context(d, rng)
    ctx["inp"] = rng.uniform(0, 1, (28, 28))
    out = oracle.evaluate(d, ctx)

    def loss(c):
        return oracle.evaluate(d, c, forward_only=True)["loss"][0]

    h = 1e-4
    for p in param_names(d):
        v = rng.standard_normal(ctx[p].shape)
        plus, minus = dict(ctx), dict(ctx)
        plus[p] = ctx[p] + h * v
        minus[p] = ctx[p] - h * v
        fd = (loss(plus) - loss(minus)) / (2 * h)
        ad = float(np.sum(out["d_" + p] * v))
        assert abs(fd - ad) <= 1e-6 * max(1.0, abs(ad)), (p, fd, ad)


@pytest.mark.agda
def test_ops_gradients_match_finite_differences(dumps):
    """Spec/Model/Ops.agda uses every constructor with a derivative (slide, backslide,
    ix-minus, ix-minusᵣ, imapb, selb, div/mod, the elementwise functions logistic, exp, log,
    recip, relu, step, bin max, minus, scaledown, ...): its dumped gradients, every coordinate,
    against central differences of its dumped loss (float64). relu and step are differentiable
    away from 0, max away from a tie: their arguments (bl, lm, bl − lm) stay clear of it at
    these inputs."""
    d = dumps["ops"]
    assert [c["name"] for c in d["context"]] == ["a", "w", "m"]
    assert [b["name"] for b in d["chain"]] == ["c", "bs", "lm", "bl", "u", "loss"]
    ops = set()

    def walk(e):
        if isinstance(e, dict):
            ops.add(e.get("op"))
            for v in e.values():
                walk(v)
        elif isinstance(e, list):
            for v in e:
                walk(v)
    walk(d["chain"])
    fns = set()

    def bins(e):
        if isinstance(e, dict):
            if e.get("op") == "bin":
                fns.add(e["fn"])
            for v in e.values():
                bins(v)
        elif isinstance(e, list):
            for v in e:
                bins(v)
    bins(d["chain"])
    assert fns == {"plus", "mul", "max"}, fns
    assert {"slide", "backslide", "ix_minus", "ix_minus_r", "imapb", "selb", "div", "mod",
            "logistic", "exp", "log", "recip", "sqrt", "relu", "step", "minus",
            "scaledown"} <= ops, sorted(o for o in ops if o)
    rng = np.random.default_rng(4)
    ctx = _random_context(d, rng, scale=1.0)
    out = oracle.evaluate(d, ctx)
    assert np.min(np.abs(out["bl"])) > 1e-2 and np.min(np.abs(out["lm"])) > 1e-2
    assert np.min(np.abs(out["bl"] - out["lm"])) > 1e-2

    def loss(c):
        return oracle.evaluate(d, c, forward_only=True)["loss"][0]

    h = 1e-6
    for p in param_names(d):
        grad = np.asarray(out["d_" + p]).ravel()
        for i in range(grad.size):
            plus, minus = dict(ctx), dict(ctx)
            e = np.zeros(grad.size)
            e[i] = h
            plus[p] = ctx[p] + e.reshape(ctx[p].shape)
            minus[p] = ctx[p] - e.reshape(ctx[p].shape)
            fd = (loss(plus) - loss(minus)) / (2 * h)
            assert abs(fd - grad[i]) <= 1e-7 * max(1.0, abs(grad[i])), (p, i, fd, grad[i])


# ------------------------------------------------------------------------------------------
# check-forward: the chain against the array-level forward
# ------------------------------------------------------------------------------------------

@pytest.mark.agda
def test_check_forward_agrees(check_forward):
    fwd = np.array(check_forward["forward"])
    chain = np.array(check_forward["chain"])
    assert fwd.shape == chain.shape == (10,)
    assert np.all((fwd > 0) & (fwd < 1))           # outputs of a logistic
    assert np.ptp(fwd) > 0                         # not a constant input by accident
    np.testing.assert_allclose(chain, fwd, rtol=1e-12, atol=0)


@pytest.mark.agda
def test_check_forward_matches_dump(check_forward, dumps):
    """The dumped chain, run by the oracle on check-forward's inputs, gives the same r."""
    d = dumps["cnn"]
    ins = check_forward["inputs"]
    assert set(ins) == {c["name"] for c in d["context"]}
    out = oracle.evaluate(d, {k: np.array(v) for k, v in ins.items()}, forward_only=True)
    np.testing.assert_allclose(out["r"].ravel(), check_forward["forward"], rtol=1e-12)
    np.testing.assert_allclose(out["loss"].ravel(), check_forward["loss"], rtol=1e-12)
    r, t = np.array(check_forward["chain"]), np.array(ins["target"])
    np.testing.assert_allclose(check_forward["loss"], [0.5 * np.sum((r - t) ** 2)], rtol=1e-12)


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------

@pytest.mark.agda
@pytest.mark.parametrize("args", [["dump", "no-such-model"], ["dump"], [], ["frobnicate"]])
def test_bad_usage_lists_models(spec_binary, args):
    r = subprocess.run([str(spec_binary), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert r.stdout == ""
    for m in MODELS:
        assert m in r.stderr


@pytest.mark.agda
def test_dump_goes_to_stdout(spec_binary, dumps):
    r = subprocess.run([str(spec_binary), "dump", "dot"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    assert json.loads(r.stdout) == dumps["dot"]

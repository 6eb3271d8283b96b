"""extract/front/frontend.py and ``python -m extract MODEL.model``: compiling a model file with the
Agda executable (``Main model FILE``), the one-line model errors, and that a failed model
writes nothing (no sources, no --out directory, no --dump-out file, no cache entry).

Most tests run a fake ``Main`` (a Python script, through ``$PROVED_KERNELS_AGDA``) that
answers like the real one; the tests marked ``agda`` run the real executable and are skipped
while it has no ``model`` command.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from extract import paths
from extract.emit import build
from extract.front import frontend
from extract.ir import dump

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

# A stand-in for build/agda/Main: `model FILE|-` prints tests/data/chain_hand.json renamed to
# the model's name; a line containing BAD is a model error at that line; CRASH, HANG, GARBAGE
# and EMPTY misbehave; anything else is a usage error (exit 2). Logs its argv to $FAKE_LOG.
FAKE = r'''#!{python}
import json, os, re, sys, time
args = sys.argv[1:]
if os.environ.get("FAKE_LOG"):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(json.dumps(args) + "\n")
if len(args) != 2 or args[0] != "model":
    print("usage: Main dump MODEL | Main check-forward", file=sys.stderr)
    sys.exit(2)
text = sys.stdin.read() if args[1] == "-" else open(args[1]).read()
lines = text.splitlines()
for n, line in enumerate(lines, 1):
    if "BAD" in line:
        print(f"{{args[1]}}:{{n}}: binding out: dense: the weight w2 has shape 10×128, so the "
              f"input must have shape 128; found 64", file=sys.stderr)
        sys.exit(1)
if "CRASH" in text:
    print("Main: Prelude.head: empty list\nCallStack (from HasCallStack):", file=sys.stderr)
    sys.exit(1)
if "HANG" in text:
    time.sleep(30)
if "GARBAGE" in text:
    print("{{not json")
    sys.exit(0)
if not text.strip():
    print(f"{{args[1]}}:1: no model statement", file=sys.stderr)
    sys.exit(1)
d = json.load(open({chain!r}))
m = re.search(r"^model\s+(\w+)", text, re.M)
d["model"] = m.group(1) if m else "chain"
print(json.dumps(d))
'''

MODEL = """model tiny          -- the fake ignores all but the name
param a : 5
param b : 5
x = a * b
loss y = sum i : 5 . (x * x)[i]
"""


@pytest.fixture
def fake_main(tmp_path, monkeypatch) -> Path:
    exe = tmp_path / "fake" / "Main"
    exe.parent.mkdir()
    exe.write_text(FAKE.format(python=sys.executable, chain=str(DATA / "chain_hand.json")))
    exe.chmod(0o755)
    monkeypatch.setenv(frontend.ENV_AGDA, str(exe))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "fake" / "log"))
    return exe


def calls(exe: Path) -> list:
    log = exe.parent / "log"
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def run_cli(args: list, cwd: Path, env_extra: dict | None = None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "extract", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def files_under(path: Path) -> list:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# -- the frontend -------------------------------------------------------------------------

def test_agda_main_location(tmp_path, monkeypatch):
    # extract.paths' own lookup when it has one (it honours $PROVED_KERNELS_AGDA first) ...
    monkeypatch.setattr(paths, "agda_main", lambda: tmp_path / "elsewhere" / "Main",
                        raising=False)
    assert frontend.agda_main() == tmp_path / "elsewhere" / "Main"
    # ... else $PROVED_KERNELS_AGDA, else build/agda/Main in the checkout
    monkeypatch.delattr(paths, "agda_main", raising=False)
    monkeypatch.setenv(frontend.ENV_AGDA, str(tmp_path / "Main"))
    assert frontend.agda_main() == tmp_path / "Main"
    monkeypatch.delenv(frontend.ENV_AGDA)
    assert frontend.agda_main() == build.ROOT / "build" / "agda" / "Main"


def test_is_model_file():
    assert frontend.is_model_file("mlp.model") and frontend.is_model_file(Path("a/b.model"))
    assert not frontend.is_model_file("cnn") and not frontend.is_model_file("cnn.json")
    assert not frontend.is_model_file("model")


def test_compile_file_and_text(fake_main, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("tiny.model").write_text(MODEL)
    out = json.loads(frontend.compile_model("tiny.model"))
    assert out["model"] == "tiny" and dump.parse(out).name == "tiny"
    assert json.loads(frontend.compile_model(Path("tiny.model")))["model"] == "tiny"
    # text goes through stdin
    assert json.loads(frontend.compile_model(MODEL.replace("tiny", "t2")))["model"] == "t2"
    assert calls(fake_main) == [["model", "tiny.model"]] * 2 + [["model", "-"]]


def test_model_error_keeps_the_path_as_given(fake_main, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("models").mkdir()
    Path("models/bad.model").write_text(MODEL + "output out = BAD\n")
    with pytest.raises(frontend.ModelError) as exc:
        frontend.compile_model("models/bad.model")
    e = exc.value
    assert str(e) == ("models/bad.model:6: binding out: dense: the weight w2 has shape "
                      "10×128, so the input must have shape 128; found 64")
    assert (e.file, e.line, e.binding) == ("models/bad.model", 6, "out")
    assert e.message.startswith("dense: the weight w2")
    # text: the name shown is name_hint, else <string>
    with pytest.raises(frontend.ModelError, match=r"^<string>:6: binding out: dense"):
        frontend.compile_model(MODEL + "output out = BAD\n")
    with pytest.raises(frontend.ModelError, match=r"^mine\.model:6: binding out: "):
        frontend.compile_model(MODEL + "output out = BAD\n", name_hint="mine.model")
    # an error without a binding; a path that starts with '-' is not read as an option
    Path("-x.model").write_text("")
    with pytest.raises(frontend.ModelError) as exc:
        frontend.compile_model("-x.model")
    assert str(exc.value) == "-x.model:1: no model statement" and exc.value.binding is None
    assert calls(fake_main)[-1] == ["model", "./-x.model"]


def test_other_failures_are_runtime_errors(fake_main, tmp_path, monkeypatch):
    # a crash that happens to exit 1 is not a model error
    with pytest.raises(RuntimeError) as exc:
        frontend.compile_model(MODEL + "-- CRASH\n")
    assert str(exc.value).endswith(" model - failed (exit status 1): Main: Prelude.head: "
                                   "empty list | CallStack (from HasCallStack):")
    with pytest.raises(RuntimeError, match="no answer after 1 s"):
        frontend.compile_model(MODEL + "-- HANG\n", timeout=1)
    with pytest.raises(FileNotFoundError, match="no model file"):
        frontend.compile_model(tmp_path / "missing.model")
    # an executable without the model command (a usage error, exit 2)
    fake_main.write_text(f"#!{sys.executable}\nimport sys\nprint('usage: Main dump MODEL', "
                         f"file=sys.stderr)\nsys.exit(2)\n")
    with pytest.raises(RuntimeError, match=r"does not know the `model` command.*make dump"):
        frontend.compile_model(MODEL)
    monkeypatch.setattr(frontend, "agda_main", lambda: tmp_path / "nowhere" / "Main")
    with pytest.raises(RuntimeError, match=r"Agda executable .* is missing; build it with "
                                           r"`make dump`"):
        frontend.compile_model(MODEL)


# -- the time limit of the whole path (extract/limits.py) ---------------------------------

def test_time_limit_in_the_agda_step(fake_main, tmp_path, monkeypatch):
    """At the limit the error names the stage (elaboration in Agda) and how long it ran; the
    executable is stopped (the fake sleeps 30 s); the Agda step's own default is not used."""
    import time
    from extract import limits
    t = time.monotonic()
    with pytest.raises(limits.TimeLimitError, match=r"^time limit of 1.5 s reached while "
                       r"elaborating the model in Agda \(it had run 1\.[45]\d* s; 1\.[45]"):
        with limits.time_limit(1.5):
            frontend.compile_model(MODEL + "-- HANG\n")
    assert time.monotonic() - t < 10
    (tmp_path / "hang.model").write_text(MODEL + "-- HANG\n")
    res = run_cli(["hang.model", "--timeout", "2", "--out", "gen"], cwd=tmp_path,
                  env_extra={frontend.ENV_AGDA: str(fake_main)})
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.startswith("error: time limit of 2 s reached while elaborating the model "
                                 "in Agda (it had run 2.") and res.stderr.count("\n") == 1, \
        res.stderr
    assert not (tmp_path / "gen").exists()
    import runtime
    with pytest.raises(limits.TimeLimitError, match="while elaborating the model in Agda"):
        runtime.load(tmp_path / "hang.model", timeout=1)
    with pytest.raises(ValueError, match="a time limit is a positive number"):
        runtime.load(tmp_path / "hang.model", timeout=0)


def test_time_limit_in_lowering_and_in_the_c_compiler(tmp_path, monkeypatch, kernel_cache):
    """The limit stops Python where it is (here a lowering made slow) and a C compiler that
    would run on (a CC that sleeps a minute first: it is killed, with its children, and the
    error comes at the limit), each named; a path that fits its limit is unchanged."""
    import time
    import runtime
    from extract import limits
    from extract.passes import lower
    from extract.emit import sources
    slow = lower.lower_to_loops

    def sleepy(*a, **k):
        time.sleep(30)
        return slow(*a, **k)

    monkeypatch.setattr(sources, "lower_to_loops", sleepy)
    with pytest.raises(limits.TimeLimitError, match=r"while lowering and the passes \(it had "
                                                     r"run 1\.\d s; 1\.\d s in all\)"):
        runtime.load(str(DATA / "dot_hand.json"), timeout=1.5)
    monkeypatch.setattr(sources, "lower_to_loops", slow)
    cc = tmp_path / "cc"
    cc.write_text("#!/bin/sh\nsleep 59.317\nexec gcc \"$@\"\n")   # a sleep of its own
    cc.chmod(0o755)
    monkeypatch.setenv("CC", str(cc))
    # a cache of its own: the run's shared cache may hold dot already (another test built it)
    monkeypatch.setenv("PROVED_KERNELS_CACHE", str(tmp_path / "own-cache"))
    t = time.monotonic()
    with pytest.raises(limits.TimeLimitError, match=r"while compiling the C \(it had run"):
        runtime.load(str(DATA / "dot_hand.json"), timeout=4)
    assert time.monotonic() - t < 15
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"{cc}" not in ps and "sleep 59.317" not in ps, ps
    monkeypatch.delenv("CC")
    m = runtime.load(str(DATA / "dot_hand.json"), timeout=300)
    assert m.spec.name == "dot"


# -- the command line ---------------------------------------------------------------------

def test_cli_model_file_writes_sources_and_dump(fake_main, tmp_path):
    (tmp_path / "tiny.model").write_text(MODEL)
    res = run_cli(["tiny.model", "--out", "gen", "--no-build", "--dump-out", "d/tiny.json",
                   "--precision", "f64"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert calls(fake_main) == [["model", "tiny.model"]]
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == \
        ["model_tiny.c", "model_tiny.cu", "model_tiny.h", "tiny.dump.json"]
    assert "typedef double real;" in (tmp_path / "gen" / "model_tiny.h").read_text()
    d = json.loads((tmp_path / "d" / "tiny.json").read_text())
    assert d["model"] == "tiny" and dump.parse(d).name == "tiny"
    assert files_under(tmp_path / "d") == ["tiny.json"]          # no temporary left behind
    # --show prints the same C
    res = run_cli(["tiny.model", "--out", "gen", "--no-build", "--precision", "f64",
                   "--show"], cwd=tmp_path)
    assert res.returncode == 0 and res.stdout == (tmp_path / "gen" / "model_tiny.c").read_text()


def test_cli_model_file_builds(fake_main, tmp_path):
    (tmp_path / "tiny.model").write_text(MODEL)
    res = run_cli(["tiny.model", "--out", "gen"], cwd=tmp_path,
                  env_extra={"PROVED_KERNELS_CACHE": str(tmp_path / "cache")})
    assert res.returncode == 0, res.stderr
    assert "built and loaded tiny (f32)" in res.stdout
    assert any(p.name.startswith("_pk_tiny_f32_") for p in (tmp_path / "cache").iterdir())


@pytest.mark.parametrize("body, message", [
    ("output out = BAD\n", "error: bad.model:6: binding out: dense: the weight w2 has shape "
                           "10×128, so the input must have shape 128; found 64"),
    ("-- GARBAGE\n", "error: $: not JSON"),                       # a broken dump
    ("-- CRASH\n", "error: "),
])
def test_cli_failure_writes_nothing(fake_main, tmp_path, body, message):
    (tmp_path / "bad.model").write_text(MODEL + body)
    res = run_cli(["bad.model", "--out", "gen", "--dump-out", "d/bad.json"], cwd=tmp_path,
                  env_extra={"PROVED_KERNELS_CACHE": str(tmp_path / "cache")})
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.startswith(message)
    assert res.stderr.count("\n") == 1                            # one line
    if "BAD" in body:
        assert res.stderr == message + "\n"
    before = {"bad.model", "fake", "fake/Main", "fake/log"}
    assert set(files_under(tmp_path)) == before                  # no gen/, d/ or cache/


def test_cli_json_argument_and_builtin_name(tmp_path):
    src = str(DATA / "chain_hand.json")
    res = run_cli([src, "--out", "a", "--no-build"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == \
        ["chain.dump.json", "model_chain.c", "model_chain.cu", "model_chain.h"]
    res = run_cli([src, "--dump", src, "--no-build"], cwd=tmp_path)        # one source only
    assert res.returncode == 2 and "--dump is for a built-in model" in res.stderr
    # a built-in name with --dump, as before; --dump-out copies the dump it read
    res = run_cli(["chain", "--dump", src, "--out", "b", "--no-build", "--dump-out",
                   "c.json"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "b" / "model_chain.c").read_text() == \
        (tmp_path / "a" / "model_chain.c").read_text()
    assert (tmp_path / "c.json").read_text() == Path(src).read_text()


# -- the real executable ------------------------------------------------------------------

MLP = (Path(__file__).resolve().parent.parent / "models" / "mlp.model").read_text()


def model_command_missing() -> str | None:
    """Why the real ``Main model`` cannot be tested (None when it can)."""
    exe = frontend.agda_main()
    if not os.access(exe, os.X_OK):
        return f"no Agda executable at {exe} (make dump)"
    res = subprocess.run([str(exe), "model", "-"], input="", capture_output=True, text=True,
                         timeout=120)
    assert res.returncode != 2, f"{exe} has no `model` command (usage error): rebuild it"
    return None


MISSING = model_command_missing()
needs_model_command = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


@pytest.mark.agda
@needs_model_command
def test_agda_cli_mlp(tmp_path):
    (tmp_path / "mlp.model").write_text(MLP)
    res = run_cli(["mlp.model", "--out", "gen", "--no-build", "--dump-out", "mlp.json"],
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == \
        ["mlp.dump.json", "model_mlp.c", "model_mlp.cu", "model_mlp.h"]
    d = json.loads((tmp_path / "mlp.json").read_text())
    m = dump.parse(d)
    assert [(c["name"], c["shape"], c["role"]) for c in d["context"]] == [
        ("x", [28, 28], "input"), ("y", 10, "input"), ("w1", [128, [28, 28]], "param"),
        ("b1", 128, "param"), ("w2", [10, 128], "param"), ("b2", 10, "param")]
    assert [a.name for a in m.chain] == ["z1", "h", "z2", "out", "loss"]


@pytest.mark.agda
@needs_model_command
def test_agda_cli_model_error(tmp_path):
    bad = MLP.replace("128x28x28", "64x28x28").replace("b1 : 128", "b1 : 64")
    (tmp_path / "mlp.model").write_text(bad)
    line = bad.splitlines().index("z2 = dense(w2, h, b2)") + 1
    res = run_cli(["mlp.model", "--out", "gen", "--dump-out", "mlp.json"], cwd=tmp_path)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.count("\n") == 1
    assert res.stderr.startswith(f"error: mlp.model:{line}: binding z2: "), res.stderr
    assert "w2" in res.stderr
    assert files_under(tmp_path) == ["mlp.model"]


@pytest.mark.agda
@needs_model_command
def test_a_byte_order_mark_is_not_part_of_the_model(tmp_path):
    """Some editors start a UTF-8 file with U+FEFF: the model is the text after it, and an
    error still names the file and its line."""
    from extract.front.frontend import compile_model

    (tmp_path / "plain.model").write_text(MLP)
    (tmp_path / "bom.model").write_text("\ufeff" + MLP, encoding="utf-8")
    assert compile_model(tmp_path / "bom.model") == compile_model(tmp_path / "plain.model")
    assert compile_model("\ufeff" + MLP) == compile_model(MLP)
    bad = MLP.replace("b1 : 128", "b1 : 64")
    (tmp_path / "bad.model").write_text("\ufeff" + bad, encoding="utf-8")
    line = bad.splitlines().index("z1 = dense(w1, x, b1)") + 1
    res = run_cli(["bad.model", "--out", "gen", "--no-build"], cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.startswith(f"error: bad.model:{line}: binding z1"), \
        res.stderr


def test_a_file_that_is_not_utf8_is_one_line(fake_main, tmp_path):
    """A binary (or Latin-1) file is refused before the executable runs, naming the file, the
    line and the offset of the first byte that is not UTF-8 (it was Haskell's
    ``hGetContents: invalid byte sequence``)."""
    raw = MODEL.encode() + b"-- caf\xe9\n\x00\xff"
    (tmp_path / "bin.model").write_bytes(raw)
    offset = raw.index(b"\xe9")
    with pytest.raises(frontend.ModelError) as exc:
        frontend.compile_model(tmp_path / "bin.model", name_hint="bin.model")
    assert str(exc.value) == (f"bin.model:6: not UTF-8 text: the byte 0xe9 at offset {offset} "
                              f"is not valid UTF-8 (a model file is UTF-8 text)")
    assert exc.value.line == 6
    res = run_cli(["bin.model", "--out", "gen"], cwd=tmp_path)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr == f"error: {exc.value}\n"
    assert calls(fake_main) == [] and not (tmp_path / "gen").exists()


@pytest.mark.agda
@needs_model_command
@pytest.mark.parametrize("locale", ["C", "POSIX"])
def test_non_ascii_comments_whatever_the_locale(tmp_path, monkeypatch, locale):
    """A UTF-8 model file with non-ASCII comments compiles under an ASCII locale too (the
    executable runs with LC_ALL=C.UTF-8), from a file and from text, to the same dump as
    without them; an error still names the right line."""
    monkeypatch.setenv("LC_ALL", locale)
    monkeypatch.setenv("LANG", locale)
    accented = MLP.replace("model mlp", "model mlp   -- réseau « à deux couches » ✓ 中文", 1)
    assert accented != MLP
    (tmp_path / "u.model").write_text(accented, encoding="utf-8")
    plain = frontend.compile_model(MLP)
    assert frontend.compile_model(tmp_path / "u.model") == plain
    assert frontend.compile_model(accented) == plain
    bad = accented.replace("b1 : 128", "b1 : 64")
    line = bad.splitlines().index("z1 = dense(w1, x, b1)") + 1
    with pytest.raises(frontend.ModelError, match=rf"^<string>:{line}: binding z1"):
        frontend.compile_model(bad)


@pytest.mark.agda
@needs_model_command
def test_names_the_c_cannot_take_are_the_models_line(tmp_path):
    """The elaborator accepts them; the extractor would not: reported at the declaring line,
    through the CLI and runtime.load alike, before anything is generated."""
    import runtime
    from extract.front.frontend import ModelError

    text = MLP.replace("b2", "_b2")     # memcpy or float are fine (extract/ir/names.py)
    line = next(k for k, t in enumerate(text.splitlines(), 1) if t.startswith("param  _b2"))
    (tmp_path / "m.model").write_text(text)
    res = run_cli(["m.model", "--out", "gen"], cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr == f"error: m.model:{line}: name '_b2' begins with an underscore or " \
                         f"holds a double one (reserved by C and C++)\n"
    with pytest.raises(ModelError) as info:
        runtime.load(tmp_path / "m.model")
    assert info.value.line == line and "_b2" in info.value.message
    n = 10 ** 14                 # n × 784 elements: past what a C struct holds (2^56 - 1)
    big = MLP.replace("w1 : 128x28x28", f"w1 : {n}x28x28").replace("b1 : 128", f"b1 : {n}")
    big = big.replace("w2 : 10x128", f"w2 : 10x{n}")
    (tmp_path / "big.model").write_text(big)
    res = run_cli(["big.model", "--out", "gen"], cwd=tmp_path)
    w1 = next(k for k, t in enumerate(big.splitlines(), 1) if t.startswith("param  w1"))
    assert res.returncode == 1 and res.stderr == (
        f"error: big.model:{w1}: param 'w1' of shape {n}×28×28 holds {n * 784:,} "
        f"elements, more than the generated C's structs hold (72,057,594,037,927,935: "
        f"9,223,372,036,854,775,807 bytes over 16 lanes of doubles)\n"), res.stderr
    assert files_under(tmp_path) == ["big.model", "m.model"]


@pytest.mark.agda
@needs_model_command
def test_an_output_that_reads_the_target_is_the_outputs_line(tmp_path):
    """predict has no target to give: an output that reads it (directly, or through bindings)
    is an error at the output's line, through the CLI and runtime.load alike; reading it in
    the loss is what the target is for."""
    import runtime
    from extract.front.frontend import ModelError

    direct = UNUSED.replace("junk = h + h\n", "").replace("param  spare : 3\n", "").replace(
        "output o = logistic(h)", "output o = logistic(h) + y")
    (tmp_path / "d.model").write_text(direct)
    res = run_cli(["d.model", "--out", "gen", "--no-build"], cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.startswith("error: d.model:6: output o reads the target y: a prediction "
                                 "is made without its target"), res.stderr
    through = direct.replace("h = dense(w, x)", "g = dense(w, x) + y\nh = g + g").replace(
        "logistic(h) + y", "logistic(h)")
    (tmp_path / "t.model").write_text(through)
    with pytest.raises(ModelError) as info:
        runtime.load(tmp_path / "t.model")
    assert info.value.line == 7 and "reads the target y through h, g:" in info.value.message
    assert files_under(tmp_path) == ["d.model", "t.model"]


@pytest.mark.agda
@needs_model_command
def test_an_empty_array_is_refused_where_its_shape_is_written(tmp_path):
    text = UNUSED.replace("param  spare : 3", "param  spare : 0x3")
    (tmp_path / "e.model").write_text(text)
    res = run_cli(["e.model", "--out", "gen", "--no-build"], cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr == ("error: e.model:5: expected a shape without a dimension of size 0 "
                          "(arrays are never empty), found 0x3\n"), res.stderr


UNUSED = """model u
input  x : 4
target y : 2
param  w : 2x4
param  spare : 3
h = dense(w, x)
junk = h + h
output o = logistic(h)
loss l = sqerr(o, y)
"""


@pytest.mark.agda
@needs_model_command
def test_what_nothing_reads_is_a_warning(tmp_path):
    import warnings

    from extract.front.frontend import UnusedWarning, compile_model

    (tmp_path / "u.model").write_text(UNUSED)
    res = run_cli(["u.model", "--out", "gen", "--no-build"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        "warning: u.model:5: param spare is never read: its gradient is zero and training "
        "leaves it as it is",
        "warning: u.model:7: binding junk is never read"]
    with pytest.warns(UnusedWarning) as caught:
        compile_model(tmp_path / "u.model")
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "param spare is never read: its gradient is zero and training leaves it as it is",
        "binding junk is never read"]
    with warnings.catch_warnings():               # the zoo reads everything it declares,
        warnings.simplefilter("error")            # and binds every sum on its own
        for model in sorted((Path(__file__).resolve().parent.parent / "models").glob("*.model")):
            compile_model(model)


@pytest.mark.agda
@needs_model_command
def test_a_sum_inside_an_elementwise_function_is_a_warning(tmp_path):
    """``h = logistic(dense(w1, x, b1))`` elaborates and extracts, but trains ~5x slower than
    with the sum bound on its own line: the line and the fix are named."""
    from extract.front.frontend import InlineSumWarning, compile_model
    text = (Path(__file__).resolve().parent.parent / "models" / "mlp.model").read_text()
    assert "z1 = dense(w1, x, b1)\nh  = logistic(z1)" in text
    (tmp_path / "m.model").write_text(text.replace("z1 = dense(w1, x, b1)\nh  = logistic(z1)",
                                                   "h = logistic(dense(w1, x, b1))"))
    with pytest.warns(InlineSumWarning) as caught:
        compile_model(tmp_path / "m.model")
    (w,) = caught
    assert str(w.message).startswith(f"{tmp_path / 'm.model'}:12: binding h computes a sum "
                                     "inside logistic"), str(w.message)
    assert "give the sum a line of its own and apply logistic to its name" in str(w.message)

"""Compile a model file (``*.model``) into an expression dump with the Agda executable.

The model file is the user's contract; the Agda elaborator (``Main model FILE``) is its only
checker: it parses the file, checks every shape, builds the chain, differentiates it, runs
``opt`` and prints the dump (docs/dump-format.md). Before and after::

    model dot                              {"format": "ad-expression-dump", "version": 5,
    param a : 5                      ->     "model": "dot", "context": [...],
    param b : 5                             "chain": [{"name": "r", ...}],
    loss r = sum i : 5 . a[i] * b[i]        "gradients": [...], ...}

``compile_model(path_or_text)`` returns the dump's JSON text. A model the elaborator rejects
raises ``ModelError``, whose text is the elaborator's one line ``FILE:LINE: message`` (or
``FILE:LINE: binding NAME: message``) with FILE as the caller wrote it; a file that is not
UTF-8 text is refused here, naming the offset of its first bad byte (the executable runs with
``LC_ALL=C.UTF-8``, so non-ASCII comments are read whatever the user's locale). A missing
executable, one without the ``model`` command, a crash or a time-out raise ``RuntimeError`` saying
what to do (one line, too: the CLI prints either as ``error: ...``). Nothing is written by this
module.
"""
from __future__ import annotations

import os
import re
import subprocess
import warnings
from pathlib import Path

from .. import limits, paths

ENV_AGDA = "PROVED_KERNELS_AGDA"
TIMEOUT = 120.0                  # seconds (generous: `Main dump cnn` takes milliseconds)
_LINE = re.compile(r"(?P<file>.*?):(?P<line>\d+): (?:binding (?P<binding>[A-Za-z_]\w*): )?"
                   r"(?P<message>.+)")


class ModelError(Exception):
    """A model the elaborator rejected; ``str()`` is its one-line message.

    ``file``, ``line`` (int) and ``binding`` (None when the message names none) are parsed
    from that line; ``message`` is what follows them."""

    def __init__(self, text: str):
        super().__init__(text)
        m = _LINE.fullmatch(text)
        self.file = m["file"] if m else None
        self.line = int(m["line"]) if m else None
        self.binding = m["binding"] if m else None
        self.message = m["message"] if m else text


def is_model_file(path) -> bool:
    """Whether ``path`` names a model file (by its suffix, ``.model``)."""
    return Path(path).suffix == ".model"


def agda_main() -> Path:
    """The Agda executable: ``extract.paths.agda_main()`` when the paths module has one, else
    ``$PROVED_KERNELS_AGDA``, else ``build/agda/Main`` (made by ``make dump``)."""
    locate = getattr(paths, "agda_main", None)
    if locate is not None:
        return Path(locate())
    env = os.environ.get(ENV_AGDA)
    return Path(env) if env else paths.ROOT / "build" / "agda" / "Main"


BOM = "\ufeff"


def _check_names(dump_text: str, source: str, shown: str) -> None:
    """What the extractor refuses of a dump the elaborator accepted (a name the generated C
    cannot take, arrays past what its structs hold, an output that reads the target) is the model's
    mistake: a ``ModelError`` at the
    line that declares the name, before anything is generated. Anything else is left to
    whoever reads the dump."""
    from ..ir import dump
    try:
        data = dump.loads(dump_text)
    except dump.DumpError:
        return
    def line_of(name: str) -> int:
        decl = re.compile(r"\s*(?:(?:input|target|param|const|output|loss)\s+)?" + re.escape(name) +
                          r"\s*[:=]")
        return next((k for k, text in enumerate(source.splitlines(), 1) if decl.match(text)), 0)

    dump.deep_enough()
    try:
        model = dump.parse(data, schema=False)  # the elaborator's output: names and sizes
    except dump.DumpError as exc:
        if exc.path == "$":
            raise ModelError(f"{shown}: {exc.message}") from None
        where = re.fullmatch(r"\$\.(context|chain)\[(\d+)\]\.name", exc.path)
        if where is None:
            return
        name = data[where[1]][int(where[2])]["name"]
        raise ModelError(f"{shown}:{line_of(name)}: {exc.message}") from None
    target = dict(model.data).get("target")
    for key, out in model.outputs:
        path = _reading(model, out, target) if target and key != "loss" else None
        if path is not None:
            through = f" through {', '.join(path)}" if path else ""
            raise ModelError(f"{shown}:{line_of(out)}: output {out} reads the target {target}"
                             f"{through}: a prediction is made without its target (predict "
                             f"has none to give); an array the output needs is an input")
    for what, name in _unused(model):
        warnings.warn(f"{shown}:{line_of(name)}: {what} {name} is never read" +
                      (": its gradient is zero and training leaves it as it is"
                       if what == "param" else ""), UnusedWarning, stacklevel=3)
    from ..ir import ir
    for b in model.chain:
        # a layer (an array of sums) under a function; a scalar's one sum costs little again,
        # and so does a log-sum-exp's (softmax_ce, log_softmax: its gradient sums the exps of
        # a row once more, as many as its value did; a layer cannot bind them on a line)
        fn = (ir.inline_sum(ir.rewrite(b.expr, _without_log_sum_exps))
              if ir.size(b.shape) > 1 else None)
        if fn is not None:
            warnings.warn(f"{shown}:{line_of(b.name)}: binding {b.name} computes a sum inside "
                          f"{fn}: the gradient computes the sum again (the zoo's MLP trained "
                          f"about 5 times slower written so); give the sum a line of its own and "
                          f"apply {fn} to its name", InlineSumWarning, stacklevel=3)


def _without_log_sum_exps(e):
    """``log(sum j . exp(…))`` as a leaf (``ir.rewrite``), so that its sum is not counted (but
    a sum inside the exp's argument, a layer written inline there, still is)."""
    from ..ir import ir
    if isinstance(e, ir.Un) and e.fn == "log" and isinstance(e.a, ir.Sum) \
            and isinstance(e.a.body, ir.Un) and e.a.body.fn == "exp" \
            and not ir._has_sum(e.a.body.a):
        return ir.One(e.shape)
    return None


def one_line_warnings() -> None:
    """Command lines print a warning as ``warning: MESSAGE``, like their errors."""
    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"


class InlineSumWarning(UserWarning):
    """A binding that writes a sum (a layer) inside an elementwise function: legal, but the
    gradient of the function needs its argument, so the sum is computed again (and again)."""


class UnusedWarning(UserWarning):
    """A declaration or binding of a model file that nothing reads (legal, but most likely a
    mistake: a parameter that never learns, a binding computed for nothing)."""


def _reading(model, name: str, wanted: str) -> list[str] | None:
    """The bindings between binding ``name`` and the array ``wanted`` it reads (directly: []),
    or None if it does not read it at all.

    >>> _reading(model, "out", "y")   # h = x + y; out = logistic(h)
    ['h']
    """
    from ..ir import ir
    exprs = {b.name: b.expr for b in model.chain}
    via: dict[str, list[str]] = {name: []}
    todo = [name]
    while todo:
        b = todo.pop(0)
        reads = ir.reads(exprs[b])
        if wanted in reads:
            return via[b]
        for r in sorted(reads):
            if r in exprs and r not in via:
                via[r] = [*via[b], r]
                todo.append(r)
    return None


def _unused(model) -> list[tuple[str, str]]:
    """(kind, name) of the inputs, parameters and bindings no binding reads, but the loss and
    the outputs."""
    from ..ir import ir
    read = set().union(*(ir.reads(b.expr) for b in model.chain))
    kept = {model.chain[-1].name, *(name for _, name in model.outputs)}
    return [(a.role, a.name) for a in model.context if a.name not in read] + \
        [("binding", b.name) for b in model.chain if b.name not in read | kept]


def read_model_text(path, shown: str | None = None) -> str:
    """The text of the model file ``path``, which must be UTF-8: a byte that is not is one
    ``ModelError`` naming the file (as ``shown``), its line and the byte's offset."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ModelError(f"{shown or path}:{line}: not UTF-8 text: the byte "
                         f"0x{raw[exc.start]:02x} at offset {exc.start} is not valid UTF-8 (a "
                         f"model file is UTF-8 text)") from None


# the Agda executable reads its file (or stdin) in the locale's encoding: UTF-8 whatever the
# user's locale (C.UTF-8 is in every glibc since 2.35, and in Debian's before)
AGDA_LOCALE = {"LC_ALL": "C.UTF-8"}


def _run(exe: Path, arg: str, stdin: str | None, timeout: float):
    left = limits.remaining()
    if left is not None:              # the whole path's limit, not the step's default
        timeout = max(left, 1e-3)
    try:
        return subprocess.run([str(exe), "model", arg], input=stdin, capture_output=True,
                              text=True, encoding="utf-8", errors="replace", timeout=timeout,
                              env={**os.environ, **AGDA_LOCALE})
    except subprocess.TimeoutExpired:
        if left is not None:
            raise limits.current().error() from None
        raise RuntimeError(f"{exe} model {arg}: no answer after {timeout:g} s") from None
    except OSError as exc:
        raise RuntimeError(f"cannot run {exe}: {exc}") from None


def compile_model(path_or_text, *, name_hint: str | None = None,
                  timeout: float = TIMEOUT) -> str:
    """The dump (JSON text) of a model given as a file (a ``Path``, or a ``str`` of one line)
    or as its text (a ``str`` of several lines: a model has at least two statements).

    ``name_hint`` is the file name error messages show (default: the path as given, or
    ``<string>`` for text). ``timeout`` bounds the Agda executable's run; under
    ``limits.time_limit`` what is left of that limit does instead. Raises ``ModelError``,
    ``FileNotFoundError`` or ``RuntimeError`` (``limits.TimeLimitError`` at the limit)."""
    with limits.stage("elaborate"):
        return _compile_model(path_or_text, name_hint, timeout)


def _compile_model(path_or_text, name_hint: str | None, timeout: float) -> str:
    is_text = isinstance(path_or_text, str) and "\n" in path_or_text
    if is_text:
        source, shown = path_or_text, name_hint or "<string>"
    else:
        given = os.fspath(path_or_text)
        if not Path(given).is_file():
            raise FileNotFoundError(f"no model file {given}")
        # a path starting with '-' would read as an option (or as stdin)
        arg, shown = ("./" + given if given.startswith("-") else given), name_hint or given
        source = read_model_text(given, shown)
    stdin = None
    if is_text or source.startswith(BOM):  # the text on stdin; an editor's byte-order mark
        arg, stdin = "-", source.removeprefix(BOM)  # is not the model's
    exe = agda_main()
    if not os.access(exe, os.X_OK):
        raise RuntimeError(f"the Agda executable {exe} is missing; build it with `make dump` "
                           f"(or set ${ENV_AGDA})")
    res = _run(exe, arg, stdin, timeout)
    if res.returncode != 0 and "hGetContents" in res.stderr and not source.isascii():
        # an executable that still reads with an ASCII locale (no C.UTF-8 on this system):
        # the text again on stdin, every other character replaced by '?' (a model's words are
        # ASCII; the others can only be in comments, or are an error either way)
        arg, stdin = "-", "".join(c if c.isascii() else "?" for c in source.removeprefix(BOM))
        res = _run(exe, arg, stdin, timeout)
    err = res.stderr.strip()
    if res.returncode == 0 and res.stdout.strip():
        _check_names(res.stdout, source, shown)
        return res.stdout
    one_line = _LINE.fullmatch(err)            # `.` stops at a line break
    if res.returncode == 1 and not res.stdout.strip() and one_line:
        file = one_line["file"]
        raise ModelError(shown + err[len(file):] if file in (arg, "-", "<stdin>") else err)
    if res.returncode == 2:
        raise RuntimeError(f"{exe} does not know the `model` command (an older build?); "
                           f"rebuild it with `make dump`")
    said = " | ".join(line.strip() for line in err.splitlines() if line.strip())
    raise RuntimeError(f"{exe} model {arg} failed (exit status {res.returncode}): "
                       f"{said[:2000] or 'nothing on stderr'}")

"""Compile generated C with gcc and load it through cffi (API, out-of-line mode); compile the
CUDA with ``nvcc -c``.

Compiler flags (``CFLAGS``), and why:

- ``-O3 -march=native``: vectorise the contiguous innermost loops for this machine. The cache
  key includes the CPU, so a cached module is never loaded on a different processor.
- ``-fopenmp``: the batch entry points run over samples in parallel.
- ``-fno-math-errno``: ``exp`` need not set ``errno``, so it can be inlined and vectorised.
- ``-fno-trapping-math``: we never look at floating-point exception flags; lets the compiler
  if-convert the guarded (zero-padded) arithmetic.
- ``-fno-signed-zeros``: lets ``x + 0`` and ``0 * x`` fold; the sign of a zero result is never
  observable in what we compute.
- ``-ffp-contract=fast``: allow fused multiply-add. This changes the last bits compared with
  separate multiply and add, identically on every run of one build: the reproducibility claim
  of docs/generated-api.md (same build, same thread count, same bits) holds.

- ``-fno-wrapv``: cffi compiles with Python's own ``CFLAGS`` first, and CPython is built with
  ``-fwrapv`` (signed overflow wraps). Under it gcc may not assume that ``i0 * 576 + j0 * 24 +
  j1`` never wraps, so it cannot turn our ``int`` index arithmetic into 64-bit address
  increments, and the training step runs 2x slower (measured: 139 against 69 us per image,
  bench/PROFILE.md). Our indices are bounded by the compile-time shapes and never overflow, so
  the flag, given after Python's, restores gcc's default.
- ``-g0``: Python's ``CFLAGS`` also ask for debug information (``-g``), which is a quarter of
  the build's time (measured on the CNN's f32 C: 16.4 s with ``-g``, 12.6 s without, gcc 12,
  -O3); the module keeps its symbol table, so a profiler still names every kernel.

The generated C declares glibc's ``exp``/``expf`` with ``__attribute__((simd))`` (as glibc's own
headers do under ``-ffast-math``), so the vectoriser calls libmvec's vector exp in the loops
over lanes that stay loops (log; exp and logistic on doubles; about 5x faster than one call per
element); it is accurate to a few ulp, and the same build always gives the same bits. The
module links ``-lmvec`` on x86-64 glibc systems. The float lane kernels' exp and logistic are
the template's own, inline (``vexp``).

Deliberately not used: ``-fassociative-math`` (it would let the vectoriser reorder our sums, so
the order of a reduction would depend on the vector width, and the fixed reduction order
documented in the API would be a lie) and ``-ffinite-math-only`` (it would let the compiler
assume no NaN or infinity, breaking NaN checks in callers and tests), hence no ``-ffast-math``.

Cache: one directory per (model, precision, key) under ``cache_dir()`` (a per-user cache
directory, or ``$PROVED_KERNELS_CACHE``), where key hashes the sources, the cffi declarations,
the flags, gcc's and cffi's versions, Python's ABI and the CPU. A build happens in a private
temporary directory under a file lock and is published with an atomic rename, so concurrent
builders (threads or processes) all succeed and all load the same module. Beside the modules,
``generated/`` names the module each (dump, precision, options, extractor sources, CPU) gave,
so that loading a model again imports it without generating its sources, and
``schema-checked/`` marks the dumps that passed the schema (``extract.ir.dump``); ``dumps/`` holds
the dumps compiled from model files (``runtime.spec``).
"""
from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from . import gcc
from .. import cache, limits
from .cpu import cpuinfo
from ..paths import (ENV_AGDA, ENV_CACHE, ENV_DUMPS, PACKAGE, ROOT, ZOO, _RESOURCES,  # noqa: F401
                     agda_main, cache_dir, locate, locations)

CFLAGS = ["-std=c11", "-O3", "-march=native", "-fopenmp", "-fno-math-errno",
          "-fno-trapping-math", "-fno-signed-zeros", "-ffp-contract=fast", "-fno-wrapv", "-g0"]
LDFLAGS = ["-fopenmp"]
if platform.system() == "Linux" and platform.machine() == "x86_64" and \
        platform.libc_ver()[0] == "glibc":
    LDFLAGS.append("-lmvec")    # the vector exp the generated C declares (see below)
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
# PROVED_KERNELS_WERROR=1: every build also compiles with WARNINGS, so a warning fails it (the
# test suite sets it: each model it builds is a check that the generated C is warning-free)
ENV_WERROR = "PROVED_KERNELS_WERROR"
NVCCFLAGS = ["-O3", "-std=c++17"]
@lru_cache(maxsize=None)
def _tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True)
        return out.stdout.splitlines()[0] if out.stdout else ""
    except (OSError, subprocess.CalledProcessError):
        return "missing"


@lru_cache(maxsize=None)
def _cpu() -> str:
    info = cpuinfo()
    return info.get("model name") or info.get("flags") or platform.processor() \
        or platform.machine()


def _key(files: dict, cdef: str, flags: list) -> str:
    import cffi
    h = hashlib.sha256()
    for part in [*(f"{n}\0{t}" for n, t in sorted(files.items())), cdef, " ".join(flags),
                 " ".join(LDFLAGS),
                 _tool_version("gcc"), cffi.__version__, sys.version,
                 sysconfig.get_config_var("EXT_SUFFIX") or "", platform.machine(), _cpu()]:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


def compile_c(c_path: Path, out: Path, flags: list | None = None, warnings: bool = True) -> None:
    """Compile one generated C file to an object (a check: the cffi build links its own)."""
    cmd = ["gcc", *(flags if flags is not None else CFLAGS), *(WARNINGS if warnings else []),
           "-c", str(c_path), "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"gcc failed ({' '.join(cmd)}):\n{res.stderr}")


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def compile_cuda(cu_path: Path, out: Path, flags: list | None = None) -> Path:
    """``nvcc -c`` the generated .cu into an object file (no GPU needed)."""
    cmd = ["nvcc", *(flags if flags is not None else NVCCFLAGS), "-c", str(cu_path),
           "-o", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{res.stderr}")
    return out


def write_if_changed(path: Path, text: str) -> bool:
    """Write a file only when its content changes (keeps timestamps and caches quiet)."""
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True


def _import(name: str, directory: Path):
    """(ffi, lib) of a cached module, verified against its record first (extract/cache.py)."""
    return cache.load(name, directory)


ENV_JOBS = "PROVED_KERNELS_JOBS"    # gcc processes at once for a split build (default: CPUs)
PROGRESS_AFTER = 3.0                # seconds of a build after which it reports its progress


def jobs() -> int:
    """How many parts of a split build gcc compiles at once: ``$PROVED_KERNELS_JOBS``, else
    the CPUs this process may run on."""
    env = os.environ.get(ENV_JOBS)
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"${ENV_JOBS} must be a positive whole number, not {env!r}")
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:      # not Linux
        return max(1, os.cpu_count() or 1)


def _compile_parts(label: str, tmp: Path, parts: list, flags: list) -> list:
    """``gcc -c`` each part (a file in ``tmp``) into an object, ``jobs()`` at a time, saying
    so on stderr (a model is split when its C takes tens of seconds); after ``PROGRESS_AFTER``
    seconds each finished part is reported too. Returns the objects, in the order of
    ``parts``.

        build resnet50 (f32): compiling 6 parts, 2 at a time
        build resnet50 (f32): 1/6 parts compiled (resnet50_part1.c: 42.4 s; 42 s so far, …)
    """
    import time
    from concurrent.futures import ThreadPoolExecutor, as_completed
    start = time.monotonic()
    objects = [tmp / (Path(p).stem + ".o") for p in parts]
    print(f"build {label}: compiling {len(parts)} parts, {jobs()} at a time", file=sys.stderr,
          flush=True)

    def one(k: int):
        t0 = time.monotonic()
        cmd = ["gcc", *flags, "-fPIC", "-I", str(tmp), "-c", str(tmp / parts[k]),
               "-o", str(objects[k])]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            name = tmp.name.rsplit(".tmp", 1)[0]
            raise gcc.failure(*_who(label), f"{' '.join(cmd)}\n{res.stderr}",
                              tmp.parent / "logs", name)
        return k, time.monotonic() - t0
    n, width = len(parts), jobs()
    with ThreadPoolExecutor(max_workers=min(width, n)) as pool:
        futures = [pool.submit(one, k) for k in range(n)]
        try:
            for done, f in enumerate(as_completed(futures), 1):
                k, took = f.result()
                elapsed = time.monotonic() - start
                if elapsed > PROGRESS_AFTER:
                    print(f"build {label}: {done}/{n} parts compiled ({parts[k]}: {took:.1f} s; "
                          f"{elapsed:.0f} s so far, {width} at a time)", file=sys.stderr,
                          flush=True)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return objects


def build_flags(flags: list | None = None) -> list:
    """gcc's flags for a module: ``flags``, else ``CFLAGS``, with ``WARNINGS`` under
    PROVED_KERNELS_WERROR=1 (the one rule: the module's name and the generated index use it)."""
    flags = list(flags if flags is not None else CFLAGS)
    if os.environ.get(ENV_WERROR) == "1":
        flags += [w for w in WARNINGS if w not in flags]
    return flags


def build(model_name: str, precision: str, files: dict, cdef: str,
          flags: list | None = None, parts: dict | None = None) -> tuple:
    """Build (or find in the cache) the cffi module of generated sources; return (ffi, lib).

    ``parts`` (``Generated.parts``: ``M_main.c``, ``M_part1.c``, …), when given, are what is
    compiled instead of ``M.c``: by gcc, ``jobs()`` at a time, into objects that cffi links
    with its wrapper into one module, the parts reported on stderr as they are done. A build
    that takes more than ``PROGRESS_AFTER`` seconds gives its time there at the end."""
    with limits.stage("compile"):
        return _build(model_name, precision, files, cdef, flags, parts)


def _build(model_name: str, precision: str, files: dict, cdef: str, flags: list | None,
           parts: dict | None) -> tuple:
    from filelock import FileLock
    flags = build_flags(flags)
    parts = dict(parts or {})
    key = _key({**files, **parts}, cdef, flags)
    name = f"_pk_{model_name}_{precision}_{key}"
    root = cache_dir()      # created 0700, or refused (extract/cache.py)
    final = root / name
    label = f"{model_name} ({precision})"
    for attempt in (1, 2):      # a damaged module is built again, once
        if _unsound(final, name) is not None:
            with FileLock(str(root / f"{name}.lock"), mode=0o600):
                reason = _unsound(final, name)
                if reason is not None:
                    if reason:
                        cache.note(final, reason)
                    _compile_module(name, key, label, root, final, files, cdef, flags, parts)
        try:
            return cache.load(name, final)
        except cache.Damaged as e:
            if attempt == 2:
                raise cache.CacheError(f"kernel cache: {final}: {e} (built again, still "
                                       f"damaged)") from None
            cache.note(final, str(e))
            with FileLock(str(root / f"{name}.lock"), mode=0o600):
                shutil.rmtree(final, ignore_errors=True)
    raise AssertionError("unreachable")


def _who(label: str) -> tuple[str, str]:
    """("mlp", "f32") from the label "mlp (f32)"."""
    model, _, precision = label.rpartition(" (")
    return model, precision.rstrip(")")


def _unsound(final: Path, name: str) -> str | None:
    """None if the cached module ``final`` may be loaded; "" if there is none; else why it is
    damaged (``cache.CacheError`` if it is foreign)."""
    if not final.exists() and not final.is_symlink():
        return ""
    try:
        return cache.damage(final, name)
    except FileNotFoundError:   # another process removed it while it was read: build it
        return 


def _compile_module(name, key, label, root, final, files, cdef, flags, parts) -> None:
    import time
    import cffi
    tmp = root / f"{name}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700)
    for fname, text in {**files, **parts}.items():
        (tmp / fname).write_text(text)
    h_file = next(f for f in files if f.endswith(".h"))
    # split: every part (the entry points first) compiled here, in parallel;
    # cffi compiles its wrapper and links
    c_files = [] if parts else [next(f for f in files if f.endswith(".c"))]
    start = time.monotonic()
    try:
        objects = _compile_parts(label, tmp, sorted(
            parts, key=lambda f: (not f.endswith("_main.c"), f)), flags) \
            if parts else []
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        ffi.set_source(name, f'#include "{h_file}"',
                       sources=[str(tmp / f) for f in c_files],
                       include_dirs=[str(tmp)], extra_compile_args=flags,
                       extra_objects=[str(o) for o in objects],
                       extra_link_args=LDFLAGS)
        with gcc.captured() as log:     # cffi lets gcc write to stderr: into the log instead
            try:
                ffi.compile(tmpdir=str(tmp), verbose=False)
            except limits.TimeLimitError:   # the time limit, not gcc: as it is
                raise
            except Exception as e:
                failed = e
            else:
                failed = None
        if failed is not None:
            raise gcc.failure(*_who(label), f"{failed}\n{log[0]}", root / "logs", name) \
                from None
        if log[0].strip():
            print(log[0], end="", file=sys.stderr, flush=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # no half-built module left behind
        raise
    took = time.monotonic() - start
    if took > PROGRESS_AFTER:
        print(f"build {label}: built in {took:.1f} s"
              + (f" ({len(objects)} parts, {jobs()} at a time)" if parts else ""),
              file=sys.stderr, flush=True)
    cache.seal(tmp, key, name)  # private files, and the module's sha256 in tmp/ok
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)


# Locations (ROOT, PACKAGE, locate, locations, agda_main, ...) live in extract/paths.py, below
# every other module; they are re-exported here, where callers have always found them.


def builtin_models() -> list[str]:
    """Names of the built-in dumps found in any of the dump directories, the zoo's included
    (``zoo/<name>.json``: ``make dump`` elaborates every ``models/<name>.model`` there)."""
    names = set()
    for d in locations("dumps"):
        for sub in (d, d / ZOO):
            if sub.is_dir():
                names.update(p.stem for p in sub.glob("*.json") if p.stem != "check-forward")
    return sorted(names)


def _find_dump(model: str) -> Path:
    """The built-in ``<model>.json``, else the zoo's ``zoo/<model>.json`` (a warning if the
    checkout's ``models/<model>.model`` is newer: ``make dump`` has not run since it changed);
    the built-in path (which does not exist) if neither is found."""
    path = locate("dumps", f"{model}.json")
    if path.exists() or "/" in model:
        return path
    zoo = locate("dumps", f"{ZOO}/{model}.json")
    if not zoo.exists():
        return path
    source = ROOT / "models" / f"{model}.model"
    if source.is_file() and source.stat().st_mtime > zoo.stat().st_mtime:
        import warnings
        warnings.warn(f"{source} is newer than its dump {zoo}; run `make dump` to use the edit "
                      f"(the dump is used as it is)", stacklevel=3)
    return zoo


def _make_dump() -> tuple[int, str]:
    """Run ``make dump`` in the source checkout; its own progress lines (``build-dump: …``:
    compiling, waiting for another build, each dump written) go to stderr as they come, so a
    first call that takes minutes says why; everything it printed is returned for an error.

    >>> _make_dump()   # prints e.g. "build-dump: compiling Spec/Main.agda into build/agda …"
    (0, '…')
    """
    import sys

    # --no-print-directory: under an outer make (``make test``) MAKEFLAGS would add
    # "Entering directory" lines to the output an error quotes
    proc = subprocess.Popen(["make", "--no-print-directory", "dump"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("build-dump:"):
            print(line, end="", file=sys.stderr, flush=True)
    return proc.wait(), "".join(lines)


def dump_path(model: str, make: bool = True) -> Path:
    """The built-in dump ``<model>.json`` (``locate("dumps", ...)``), else the zoo's
    ``zoo/<model>.json`` (so ``lenet5`` names ``models/lenet5.model``'s dump, and ``cnn`` the
    spec's own CNN, which ``models/cnn.model`` elaborates to). When it is nowhere and ``make``:
    ``ValueError`` if other built-in dumps exist (a name that is not one), else run ``make
    dump`` in the source checkout (if this is one) to create them."""
    path = _find_dump(model)
    if path.exists() or not make:
        return path
    known = builtin_models()
    if known:  # dumps are there, just not this one: do not run `make dump` for a typo
        raise ValueError(f"unknown model {model!r}: not a built-in model ({', '.join(known)}), "
                         f"a dump (.json) or a model file (.model); if it is a built-in model "
                         f"newer than these dumps, run `make dump`")
    if (ROOT / "Makefile").is_file() and (ROOT / "Spec").is_dir():
        returncode, output = _make_dump()
        path = _find_dump(model)
        if returncode == 0 and path.exists():
            return path
        detail = f":\n{output[-4000:]}"
    else:
        detail = " (not a source checkout: no Makefile)"
    looked = ", ".join(str(p) for p in [*locations("dumps", f"{model}.json"),
                                        *locations("dumps", f"{ZOO}/{model}.json")])
    raise FileNotFoundError(
        f"no dump of model {model!r} (looked at {looked}), and `make dump` did not create "
        f"one{detail}")


def load(model, precision: str = "f32", dump=None, options=None) -> tuple:
    """(ffi, lib) of a model's generated C: ``model`` is a name (its dump is ``dump``, a path
    or a decoded JSON value, else the built-in ``dump_path(model)``) or a parsed ``ir.Model``."""
    from ..ir import dump as dump_mod
    from ..passes.lower import Options
    from .sources import generate
    if isinstance(model, str):
        if dump is None:
            dump = dump_path(model)
        m = dump_mod.load(dump) if isinstance(dump, (str, Path)) else dump_mod.parse(dump)
    else:
        m = model
    options = options or Options()
    # a Model handed in may be a pass's output, which keeps its dump's hash: generate it
    index = _generated_index(m, precision, options) if isinstance(model, str) else None
    if index is not None and index.is_file():  # generated and built before: import it
        name = index.read_text().strip()
        if re.fullmatch(r"_pk_\w+", name) and (cache_dir() / name / "ok").exists():
            try:
                return _import(name, cache_dir() / name)
            except cache.Damaged:   # generated again below, and built again by build()
                pass
    g = generate(m, precision, options)
    out = build(m.name, precision, g.files, g.cdef, parts=g.parts)
    if index is not None:
        key = _key({**g.files, **g.parts}, g.cdef, build_flags())
        try:
            cache.private_dir(index.parent)
            cache.write_private(index, f"_pk_{m.name}_{precision}_{key}\n")
        except OSError:  # a read-only cache: generate again next time
            pass
    return out


@lru_cache(maxsize=None)
def _code_hash() -> str:
    """A hash of the extractor's own sources and templates: what the generated C depends on
    besides the dump, the precision, the options and the processor."""
    h = hashlib.sha256()
    templates = locate("templates")
    files = [*PACKAGE.rglob("*.py"), *(p for p in templates.rglob("*") if p.is_file())]
    for path in sorted(set(files)):
        h.update(str(path.relative_to(PACKAGE if path.suffix == ".py" else templates))
                 .encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _generated_index(m, precision: str, options) -> Path | None:
    """Where the module generated from this dump (its hash), precision and options is named,
    so that loading a model again skips generating its sources (seconds for a large model):
    ``generated/<key>`` in the cache, a file holding the module's name; None for a model
    without a dump hash."""
    if not m.dump_hash:
        return None
    from .sources import SPLIT_BYTES
    h = hashlib.sha256()
    for part in [m.dump_hash, precision, repr(options), _code_hash(), _cpu(), platform.machine(),
                 sys.version, " ".join(build_flags()), str(SPLIT_BYTES)]:
        h.update(part.encode() + b"\0")
    return cache_dir() / "generated" / h.hexdigest()[:32]

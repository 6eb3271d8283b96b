"""Where things are: the source checkout, the installed package, the kernel cache, and the
resources found through them (templates, the dump schema, the bundled MNIST, the built-in
dumps, the Agda executable).

The bottom of ``extract``: it imports nothing of the project, so every stage can find a file
without importing the stages above it (``dump`` reads the schema, ``build`` keeps the cache;
both re-export from here). Before and after::

    locate("schema")         -> <checkout>/docs/dump-format.schema.json
    locate("dumps", "x.json") -> $PROVED_KERNELS_DUMPS/x.json if set and there, else the copy in
                                the installed package, else <checkout>/build/dump/x.json
"""
from __future__ import annotations

import os
from pathlib import Path

ENV_CACHE = "PROVED_KERNELS_CACHE"


def private_dir(path: Path) -> Path:
    """A directory of the cache, created 0700 whatever the umask (extract/cache.py)."""
    from .cache import private_dir as make
    return make(path)


def cache_dir() -> Path:
    """The kernel cache: ``$PROVED_KERNELS_CACHE``, else the per-user cache directory; created
    0700, and refused (``cache.CacheError``) unless this user owns it and nobody else may write
    it (extract/cache.py)."""
    from .cache import private_dir
    env = os.environ.get(ENV_CACHE)
    if env:
        return private_dir(Path(env))
    import platformdirs
    return private_dir(Path(platformdirs.user_cache_dir("proved-kernels")))


ROOT = Path(__file__).resolve().parent.parent   # the source checkout (when running from one)
PACKAGE = Path(__file__).resolve().parent       # the installed (or checked-out) ``extract``
ENV_AGDA = "PROVED_KERNELS_AGDA"                # path of the Agda executable ``Main``
ENV_DUMPS = "PROVED_KERNELS_DUMPS"              # a directory of built-in dumps ``<model>.json``
ZOO = "zoo"                                     # the dumps' subdirectory of the zoo's dumps

# Where each resource may be, in lookup order: an environment variable (None: no variable), a
# path inside the installed package (copied there by setup.py when it builds a wheel; relative
# to this package), and a path in the source checkout.
_RESOURCES = {
    # kind: (environment variable, path in the package, path in the checkout)
    "templates": (None, "emit/templates", "extract/emit/templates"),
    "schema": (None, "_schema/dump-format.schema.json", "docs/dump-format.schema.json"),
    "mnist": (None, "../runtime/_data/mnist", "data/mnist"),
    "dumps": (ENV_DUMPS, "_dumps", "build/dump"),
    "agda": (ENV_AGDA, "_agda/Main", "build/agda/Main"),
}


def locations(kind: str, name: str | None = None) -> list[Path]:
    """Every place a resource is looked for, in order (see ``locate``)."""
    env, in_package, in_checkout = _RESOURCES[kind]
    out = []
    if env and os.environ.get(env):
        out.append(Path(os.environ[env]))
    out.append((PACKAGE / in_package).resolve())
    out.append(ROOT / in_checkout)
    if name is not None:
        out = [p / name for p in out]
    return out


def locate(kind: str, name: str | None = None) -> Path:
    """Where a resource lives; the one lookup for everything outside the Python sources.

    ``kind``: ``"templates"`` (the Jinja templates), ``"schema"`` (the dump's JSON Schema),
    ``"mnist"`` (the bundled MNIST subset), ``"dumps"`` (the built-in dumps; with ``name`` the
    file ``<name>``), ``"agda"`` (the Agda executable ``Main``). Order: ``$PROVED_KERNELS_DUMPS``
    / ``$PROVED_KERNELS_AGDA`` (dumps and agda only), then the copy inside the installed package
    (``extract/_schema``, ``runtime/_data/mnist``, ``extract/_dumps``, ``extract/_agda/Main``:
    setup.py copies them in when it builds the wheel, the last two only if ``make dump`` had
    made them), then the source checkout (``docs/``, ``data/mnist``, ``build/dump``,
    ``build/agda/Main``). The templates are the package's own files
    (``extract/emit/templates``, package data), in a checkout and installed alike. Returns the
    first that exists, else the checkout's path (which does not exist).
    """
    candidates = locations(kind, name)
    return next((p for p in candidates if p.exists()), candidates[-1])


def agda_main() -> Path:
    """The Agda executable that prints the dumps (``locate("agda")``; may not exist)."""
    return locate("agda")

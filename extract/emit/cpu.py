"""The processor the kernels are generated and built for, as ``/proc/cpuinfo`` describes it.

    cpuinfo()["model name"], cpuinfo()["flags"]    # "AMD EPYC", "fpu vme ... avx512f ..."

One reader for the places that ask (the build cache key and the benchmark's peak,
``bench/machine.py``): the fields of the first processor, as strings;
empty where there is no ``/proc/cpuinfo`` (not Linux).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def cpuinfo() -> dict[str, str]:
    """``field: value`` of the first processor block of ``/proc/cpuinfo``."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def flags(info: dict | None = None) -> set[str]:
    """The processor's flags (``avx512f``, ...), of ``info`` or of :func:`cpuinfo`."""
    return set((cpuinfo() if info is None else info).get("flags", "").split())

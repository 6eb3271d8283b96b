"""The machine's float32 peak: cores x FMA units x vector width x 2 x clock.

* **vector width**: the width of the FMA datapath: the widest vector ISA in
  ``/proc/cpuinfo``'s flags (``avx512f``: 16 floats; ``avx2`` with ``fma``: 8; else 4, SSE),
  except on AMD Zen 4 (family 25 with ``avx512f``), whose FMA pipes are 256 bits wide and run
  a 512-bit FMA in two halves: 8 floats;
* **FMA units per core**: not readable from the CPU; 2 by default (every Intel server core with
  AVX-512 since Skylake-SP's Gold 6xxx, and client cores since Haswell for AVX2), override with
  ``$BENCH_FMA_UNITS``;
* **clock**: ``$BENCH_CLOCK_GHZ`` if set; else the ``@ x.xxGHz`` of the CPU's model name; else
  ``cpu MHz`` of ``/proc/cpuinfo`` (under KVM this is the TSC frequency the hypervisor
  reports, the nominal clock, not a measured one: turbo may exceed it);
* **cores**: the thread count of the measurement (one thread per core).

A row's ``% peak`` is its GFLOP/s over this peak at its thread count.
"""

from __future__ import annotations

import os
import re

from extract.cpu import cpuinfo, flags as cpu_flags


def describe(info: dict | None = None) -> dict:
    """The peak's factors for the processor ``info`` describes (default: this one)."""
    info = cpuinfo() if info is None else info
    flags = cpu_flags(info)
    mhz = float(info["cpu MHz"]) if info.get("cpu MHz") else None
    name = info.get("model name")
    if "avx512f" in flags and info.get("vendor_id") == "AuthenticAMD" \
            and info.get("cpu family") == "25":
        width, isa = 8, "AVX-512 on 256-bit FMA pipes (Zen 4)"
    elif "avx512f" in flags:
        width, isa = 16, "AVX-512"
    elif "avx2" in flags and "fma" in flags:
        width, isa = 8, "AVX2+FMA"
    else:
        width, isa = 4, "SSE"
    if os.environ.get("BENCH_CLOCK_GHZ"):
        ghz, how = float(os.environ["BENCH_CLOCK_GHZ"]), "$BENCH_CLOCK_GHZ"
    elif name and re.search(r"@\s*([\d.]+)\s*GHz", name):
        ghz, how = float(re.search(r"@\s*([\d.]+)\s*GHz", name).group(1)), "the CPU's model name"
    elif mhz:
        ghz, how = mhz / 1000, "`cpu MHz` of /proc/cpuinfo (nominal, as the hypervisor reports it)"
    else:
        ghz, how = None, "unknown"
    units = int(os.environ.get("BENCH_FMA_UNITS", "2"))
    per_core = units * width * 2 * ghz if ghz else None
    return {"isa": isa, "vector_floats": width, "fma_units": units, "clock_ghz": ghz,
            "clock_source": how, "peak_gflops_per_core": per_core, "cpu_model": name,
            "cores": os.cpu_count()}


def peak_gflops(threads: int, info: dict | None = None) -> float | None:
    info = info or describe()
    p = info["peak_gflops_per_core"]
    return p * threads if p else None

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

That is the **nominal** peak. Under a hypervisor, or with turbo, the clock the cores sustain
differs from the nominal one (a Zen 4 VM of this project: 2.6 GHz nominal, 3.66 sustained), so
the peak is also **measured** (``measure``): an FMA loop in inline assembly at the widest
vector ISA (512-bit with ``avx512f``, else 256-bit with ``avx2`` and ``fma``), 12 independent
accumulators in registers (more than FMA latency x units on any of these cores), run on every
thread of the measurement at once; the per-core rate is the slowest thread's, best of 5 runs.
It counts whatever the core sustains: the FMA units, their width and the clock under that load
(a processor that lowers its clock for AVX-512 is measured at the lowered clock). The implied
clock is the measured rate over units x width x 2.

A row's ``% peak`` is its GFLOP/s over the measured peak at its thread count, else (no x86-64
FMA, or no C compiler) the nominal one.

    describe(measure_threads=(1, 2))["peak_gflops_per_core"]   # 116 on that Zen 4 (nominal 83)
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from extract.emit.cpu import cpuinfo, flags as cpu_flags

# one asm statement: set the two factors to 1 and the 12 accumulators to 0 (no denormal
# operands), then `steps` times one FMA into each accumulator; every register it writes is
# declared clobbered (xmm16-31 need -mavx512f: compiled with -march=native)
_FMA_LOOP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <omp.h>
#if WIDTH == 16
#define R "zmm"
#define A "30"
#define B "31"
#define CLOBBER_AB "xmm30", "xmm31"
#else
#define R "ymm"
#define A "14"
#define B "15"
#define CLOBBER_AB "xmm14", "xmm15"
#endif
#define F(r) "vfmadd231ps %%" R A ", %%" R B ", %%" R #r "\n\t"
#define Z(r) "vxorps %%xmm" #r ", %%xmm" #r ", %%xmm" #r "\n\t"
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
int main(int argc, char **argv)
{
    const int threads = atoi(argv[1]);
    const long steps = atol(argv[2]);
    const float one = 1.0f;
    double slowest = 1e30;
    int team = 0;
    #pragma omp parallel num_threads(threads) reduction(min: slowest)
    {
        #pragma omp single
        team = omp_get_num_threads();
        #pragma omp barrier
        long n = steps;
        const double t0 = now();
        __asm__ volatile("vbroadcastss %1, %%" R A "\n\t"
                         "vbroadcastss %1, %%" R B "\n\t"
                         Z(0) Z(1) Z(2) Z(3) Z(4) Z(5) Z(6) Z(7) Z(8) Z(9) Z(10) Z(11)
                         "1:\n\t"
                         F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11)
                         "dec %0\n\t"
                         "jnz 1b\n\t"
                         : "+r"(n) : "m"(one)
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                           "xmm8", "xmm9", "xmm10", "xmm11", CLOBBER_AB, "cc");
        slowest = 12.0 * WIDTH * 2 * steps / (now() - t0) / 1e9;
    }
    if (team != threads)
        return 3;               /* fewer threads than asked: not a measurement of them */
    printf("%.3f\n", slowest);
    return 0;
}
"""


RUNS = 5


def measure(threads: int, flags: set | None = None, steps: int = 20_000_000,
            runs: int = RUNS) -> float | None:
    """GFLOP/s per core of an FMA loop run on ``threads`` threads at once (the slowest thread's,
    best of ``runs``), or None where it cannot run (not x86-64 with FMA, no compiler)."""
    flags = cpu_flags(cpuinfo()) if flags is None else flags
    width = 16 if "avx512f" in flags else 8 if {"avx2", "fma"} <= flags else None
    if width is None or os.uname().machine != "x86_64":
        return None
    cc = os.environ.get("CC", "gcc")
    with tempfile.TemporaryDirectory() as d:
        src, exe = Path(d) / "fma.c", Path(d) / "fma"
        src.write_text(_FMA_LOOP)
        try:
            subprocess.run([cc, "-O2", "-march=native", "-fopenmp", f"-DWIDTH={width}", str(src),
                            "-o", str(exe)],
                           check=True, capture_output=True, timeout=60)
            rates = [float(subprocess.run([str(exe), str(threads), str(steps)], check=True,
                                          capture_output=True, text=True, timeout=60).stdout)
                     for _ in range(runs)]
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
    return max(rates)


def describe(info: dict | None = None, measure_threads: tuple[int, ...] = ()) -> dict:
    """The peak's factors for the processor ``info`` describes (default: this one); with
    ``measure_threads``, also the peak measured at each of those thread counts (this
    processor only)."""
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
    nominal = units * width * 2 * ghz if ghz else None
    by_threads = {str(t): measure(t, flags) for t in sorted(set(measure_threads))}
    by_threads = {t: r for t, r in by_threads.items() if r}
    # the peak per core at the most threads measured that the cores can run at once (all
    # busy: the lower clock; more threads than cores would share them)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    fit = [t for t in by_threads if int(t) <= (cpus or 1)]
    measured = by_threads[max(fit, key=int)] if fit else None
    peak_threads = max(fit, key=int) if fit else None
    return {"isa": isa, "vector_floats": width, "fma_units": units, "clock_ghz": ghz,
            "clock_source": how, "nominal_gflops_per_core": nominal,
            "measured_gflops_per_core": by_threads, "measured_runs": RUNS,
            "measured_peak_threads": peak_threads,
            "measured_clock_ghz": measured / (units * width * 2) if measured else None,
            "peak_gflops_per_core": measured or nominal,
            "peak_source": "measured" if measured else "nominal",
            "cpu_model": name, "cores": os.cpu_count()}


def peak_gflops(threads: int, info: dict | None = None) -> float | None:
    """The peak of ``threads`` cores: measured at that thread count if it was, else the
    description's per-core peak times ``threads``."""
    info = info or describe()
    p = (info.get("measured_gflops_per_core") or {}).get(str(threads)) \
        or info["peak_gflops_per_core"]
    return p * threads if p else None

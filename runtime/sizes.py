"""Sizes before memory: what a file declares is checked before anything of that size is
allocated.

Every reader of the runtime asks here first: ``npz_members`` reads the header of each array in
an ``.npz`` (its shape and dtype, a few hundred bytes, never the data) and refuses one that
declares more than the limit, more than the model needs (``expect``), or more than the bound on
its decompression ratio (a zip bomb: a small file that inflates to gigabytes);
``inflate`` decompresses a gzip stream in pieces, refusing once the output passes the limit or
the ratio bound; ``check_alloc`` is the last word before a large buffer.

    npz_members(path)                -> {name: (shape, dtype)}, or DataLimitError
    inflate(raw, path, limit)        -> bytes, or DataLimitError
    check_alloc(nbytes, what)        DataLimitError unless it fits the available memory

Limits: ``$PROVED_KERNELS_MAX_BYTES`` (one array or file, bytes, a suffix K/M/G/T allowed;
default: half the memory available now), ``$PROVED_KERNELS_MAX_RATIO`` (default 200: deflate
reaches about 1000 on zeros; real features and weights stay far below 200). The ratio applies
only past ``RATIO_FREE`` bytes (1 MiB), so a small array of zeros is never refused.
"""
from __future__ import annotations

import os
import re
import zipfile
import zlib

import numpy as np

ENV_MAX_BYTES = "PROVED_KERNELS_MAX_BYTES"
ENV_MAX_RATIO = "PROVED_KERNELS_MAX_RATIO"
MAX_RATIO = 200
RATIO_FREE = 1 << 20


class DataLimitError(ValueError):
    """A file declares more than may be read into memory (one line)."""


class InferenceOnlyWarning(UserWarning):
    """A model whose batch kernels' buffers pass the memory available loads for predictions
    alone, one sample at a time (``runtime.Model``): the message says what training needs."""


def _parse_bytes(text: str, var: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text.strip(), re.I)
    if m is None:
        raise ValueError(f"${var} must be a number of bytes (a suffix K, M, G or T allowed), "
                         f"not {text!r}")
    return int(float(m.group(1)) * 1024 ** "_KMGT".index(m.group(2).upper() or "_"))


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable``; the physical memory elsewhere), at most
    ``$PROVED_KERNELS_MEMORY`` (the budget extract/dump.py checks a model's buffers against)."""
    env = os.environ.get("PROVED_KERNELS_MEMORY", "").strip()
    if env:
        return min(_parse_bytes(env, "PROVED_KERNELS_MEMORY"), _available())
    return _available()


def _available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 34


def max_bytes() -> int:
    env = os.environ.get(ENV_MAX_BYTES)
    if env:
        return _parse_bytes(env, ENV_MAX_BYTES)
    return available_memory() // 2


def max_ratio() -> float:
    env = os.environ.get(ENV_MAX_RATIO)
    if env:
        try:
            return float(env)
        except ValueError:
            raise ValueError(f"${ENV_MAX_RATIO} must be a number, not {env!r}") from None
    return MAX_RATIO


def show_bytes(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def _limit_error(path, what: str, nbytes: int, limit: int) -> DataLimitError:
    return DataLimitError(f"{path}: {what} needs {show_bytes(nbytes)}, more than the limit of "
                          f"{show_bytes(limit)} (half the memory available, or "
                          f"${ENV_MAX_BYTES}); refused before reading it")


def npz_members(path, expect: dict | None = None, limit: int | None = None) -> dict:
    """{array name: (shape, dtype)} of the ``.npz`` at ``path``, read from the headers alone.
    Refused (``DataLimitError``): an array whose declared size passes ``limit`` (default
    ``max_bytes()``), all of them together passing it, one whose inflated size is more than
    ``max_ratio()`` times its compressed size (past ``RATIO_FREE``), one whose zip entry is
    not the size its header declares, and, for a name in ``expect`` ({name: shape}), one of
    more elements than that shape. Not an .npz: ``ValueError``."""
    limit = max_bytes() if limit is None else limit
    ratio = max_ratio()
    out, total = {}, 0
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise ValueError(f"{path}: not an .npz archive ({e})") from None
    with zf:
        for info in zf.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if info.file_size > RATIO_FREE and info.compress_size * ratio < info.file_size:
                raise DataLimitError(
                    f"{path}: {name} inflates from {show_bytes(info.compress_size)} to "
                    f"{show_bytes(info.file_size)} (ratio "
                    f"{info.file_size / max(1, info.compress_size):.0f}, "
                    f"more than {ratio:g}: a zip bomb?); refused before inflating it "
                    f"(${ENV_MAX_RATIO} raises the bound)")
            if not info.filename.endswith(".npy"):    # numpy reads it whole, as bytes
                if info.file_size > limit:
                    raise _limit_error(path, name, info.file_size, limit)
                total += info.file_size
                if total > limit:
                    raise _limit_error(path, "its arrays together", total, limit)
                continue
            try:
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
                    else:
                        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            except (ValueError, OSError, zipfile.BadZipFile, zlib.error, EOFError) as e:
                raise ValueError(f"{path}: {name}: not a NumPy array ({e})") from None
            count = 1
            for d in shape:
                count *= int(d)
            nbytes = count * dtype.itemsize
            if nbytes > limit:
                raise _limit_error(path, f"{name} (shape {'x'.join(map(str, shape)) or '()'}, "
                                         f"{dtype})", nbytes, limit)
            if not dtype.hasobject and info.file_size < nbytes:
                raise DataLimitError(f"{path}: {name} declares {show_bytes(nbytes)} of data "
                                     f"but its entry holds {show_bytes(info.file_size)}: a "
                                     f"truncated or forged archive")
            if not dtype.hasobject and nbytes and info.file_size > RATIO_FREE and \
                    info.compress_size * ratio < nbytes:
                raise DataLimitError(
                    f"{path}: {name} declares {show_bytes(nbytes)} from "
                    f"{show_bytes(info.compress_size)} compressed (ratio more than {ratio:g}: "
                    f"a zip bomb?); refused before inflating it (${ENV_MAX_RATIO} raises the "
                    f"bound)")
            if expect is not None and name in expect:
                want = 1
                for d in expect[name]:
                    want *= int(d)
                if count > want:    # more than the model needs (another shape of as many
                    # elements is read, and its message names both shapes)
                    raise DataLimitError(
                        f"{path}: {name} has shape {'x'.join(map(str, shape)) or '()'} "
                        f"({count:,} elements), the model's is "
                        f"{'x'.join(map(str, expect[name])) or '()'} ({want:,}); refused "
                        f"before reading it")
            total += nbytes
            if total > limit:
                raise _limit_error(path, "its arrays together", total, limit)
            out[name] = (tuple(shape), dtype)
    return out


def inflate(raw: bytes, path, limit: int | None = None, head: int = 0, need=None) -> bytes:
    """The gzip stream ``raw`` decompressed in pieces: refused once the output passes
    ``limit`` (default ``max_bytes()``) or ``max_ratio()`` times the input (past
    ``RATIO_FREE``). ``need(first_bytes) -> int | None`` (the first ``head`` bytes out, or
    fewer; None while they do not hold the header) gives the size the stream's header
    declares: checked against the limit before more is inflated, and the output may not pass
    it."""
    limit = max_bytes() if limit is None else limit
    ratio = max_ratio()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    declared = None
    pos, step = 0, 1 << 16
    data = memoryview(raw)
    fed_before = 0      # input of the earlier gzip members
    while True:
        if d.unconsumed_tail:
            chunk = d.decompress(d.unconsumed_tail, step)
        elif pos < len(data):
            chunk = d.decompress(data[pos:pos + step], step)
            pos += step
        else:
            out += d.flush()
            if not d.eof:
                raise EOFError("the compressed file ended before the end-of-stream marker")
            break
        out += chunk
        if declared is None and need is not None:     # as soon as the header is out
            declared = need(bytes(out[:head]))
            if declared is not None and declared > limit:
                raise _limit_error(path, "its data (as its header declares)", declared, limit)
        cap = limit if declared is None else min(limit, declared)
        if len(out) > cap:
            raise _limit_error(path, "inflating it", len(out), cap) if declared is None or \
                cap == limit else DataLimitError(
                    f"{path}: inflates past the {show_bytes(declared)} its header declares; "
                    f"refused")
        consumed = min(pos, len(data)) - len(d.unconsumed_tail)
        if len(out) > RATIO_FREE and len(out) > ratio * max(1, consumed + fed_before):
            raise DataLimitError(f"{path}: inflates more than {ratio:g} times (a gzip bomb?); "
                                 f"refused after {show_bytes(len(out))} "
                                 f"(${ENV_MAX_RATIO} raises the bound)")
        if d.eof:
            # where the member ended in the input: the next member (cat a.gz b.gz) starts there
            off = min(pos, len(data)) - len(d.unused_data)
            if bytes(data[off:off + 2]) == b"\x1f\x8b":     # another member: go on
                fed_before += off
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                data, pos = data[off:], 0
                continue
            break
        if not chunk and not d.unconsumed_tail and pos >= len(data):
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
    return bytes(out)


def check_alloc(nbytes: int, what: str, largest: list | None = None) -> None:
    """``DataLimitError`` if ``nbytes`` is more than the memory available now; ``largest``:
    [(name, bytes)] named in the message (the biggest first)."""
    avail = available_memory()
    if nbytes > avail:
        big = ""
        if largest:
            top = sorted(largest, key=lambda x: -x[1])[:3]
            big = "; the largest: " + ", ".join(f"{n} ({show_bytes(b)})" for n, b in top)
        raise DataLimitError(f"{what} needs {show_bytes(nbytes)}, more than the "
                             f"{show_bytes(avail)} of memory available{big}")


def check_npy_or_npz(path, expect: dict | None = None, limit: int | None = None) -> None:
    """Before ``np.load(path)``: an ``.npz`` is checked by ``npz_members``; a ``.npy`` by its
    header (its declared size against the limit and against the bytes the file holds: NumPy
    would allocate the declared size first). Anything else is left to the caller."""
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
            if magic == b"\x93NUMPY":
                f.seek(0)
                try:
                    version = np.lib.format.read_magic(f)
                    shape, _, dtype = (np.lib.format.read_array_header_1_0(f)
                                       if version == (1, 0) else
                                       np.lib.format.read_array_header_2_0(f))
                except ValueError as e:
                    raise ValueError(f"{path}: not a NumPy array ({e})") from None
                count = 1
                for d in shape:
                    count *= int(d)
                nbytes = count * dtype.itemsize
                limit = max_bytes() if limit is None else limit
                if nbytes > limit:
                    raise _limit_error(path, f"an array of shape "
                                             f"{'x'.join(map(str, shape)) or '()'} ({dtype})",
                                       nbytes, limit)
                held = os.fstat(f.fileno()).st_size - f.tell()
                if not dtype.hasobject and held < nbytes:
                    raise DataLimitError(f"{path}: declares {show_bytes(nbytes)} of data but "
                                         f"holds {show_bytes(held)}: truncated or forged")
                return
    except FileNotFoundError:
        return
    if magic[:2] == b"PK":
        npz_members(path, expect, limit)

"""Checked casts: every value that does not survive the cast to a bin's dtype is counted, never hidden.

``ndarray.tofile()`` writes whatever dtype the array has; ``astype`` turns 70000.0 into fp16 ``inf`` and 2.7 into
int 2 without a word. Here the loss is counted (overflow, NaN/inf, integer truncation, out of range) and the largest
cast error is measured, so the caller can refuse a lossy dataset or report what it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from binio.dtypes import dtype

# Values are checked in slices of this many elements: big enough for numpy's loops, small enough for the cache.
_CHUNK = 1 << 16


@dataclass(frozen=True)
class CastReport:
    """What a cast did to the values: counts of each kind of loss, and the largest error among finite values."""

    source_dtype: str
    target_dtype: str
    values: int = 0
    overflow: int = 0  # finite values that became inf (fp16 > 65504)
    nan: int = 0  # NaN in the source
    inf: int = 0  # inf in the source
    truncated: int = 0  # fractional values cast to an integer type
    out_of_range: int = 0  # values outside the integer (or bool) target's range
    max_error: float = 0.0  # largest |cast - source| over values that stayed finite

    @property
    def lossy(self) -> int:
        """How many values did not survive the cast."""
        return self.overflow + self.nan + self.inf + self.truncated + self.out_of_range

    def merge(self, other: CastReport) -> CastReport:
        return CastReport(
            source_dtype=self.source_dtype if self.values else other.source_dtype,
            target_dtype=self.target_dtype if self.values else other.target_dtype,
            values=self.values + other.values, overflow=self.overflow + other.overflow, nan=self.nan + other.nan,
            inf=self.inf + other.inf, truncated=self.truncated + other.truncated,
            out_of_range=self.out_of_range + other.out_of_range, max_error=max(self.max_error, other.max_error),
        )

    def describe_loss(self) -> str:
        """``3 overflow float16 (|x| > 65504), 1 NaN``: the kinds of loss present, for one message line."""
        parts: list[str] = []
        if self.overflow:
            limit = float(np.finfo(np.dtype(dtype(self.target_dtype).numpy)).max) if dtype(
                self.target_dtype).is_float else 0.0
            parts.append(f"{self.overflow} overflow {self.target_dtype} (|x| > {limit:g})")
        if self.nan:
            parts.append(f"{self.nan} NaN")
        if self.inf:
            parts.append(f"{self.inf} inf")
        if self.truncated:
            parts.append(f"{self.truncated} truncated to {self.target_dtype} (fractional part lost)")
        if self.out_of_range:
            parts.append(f"{self.out_of_range} out of {self.target_dtype} range")
        return ", ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {"from": self.source_dtype, "to": self.target_dtype, "values": self.values, "overflow": self.overflow,
                "nan": self.nan, "inf": self.inf, "truncated": self.truncated, "out_of_range": self.out_of_range,
                "max_error": self.max_error}


def _slices(count: int) -> range:
    return range(0, count, _CHUNK)


def _max_error(src: np.ndarray, dst: np.ndarray, finite: np.ndarray | None = None) -> float:
    """max |dst - src| over the values where `finite` is set (all when None)."""
    if src.size == 0:
        return 0.0
    work = _error_dtype(src.dtype, dst.dtype)
    diff = np.abs(np.subtract(dst, src, dtype=work))
    if finite is not None:
        diff = diff[finite]
    return float(diff.max()) if diff.size else 0.0


def _error_dtype(source: np.dtype, target: np.dtype) -> type[np.floating]:
    wide = source.itemsize > 4 or target.itemsize > 4 or source.kind in "iub"
    return np.float64 if wide else np.float32


def _check_float_target(src: np.ndarray, dst: np.ndarray) -> tuple[int, int, int, float]:
    """(overflow, nan, inf, max_error) of a cast to a float dtype, counted value by value.

    Only called by _cast_float_target for a chunk it could not settle as clean (a non-finite value or one beyond
    the target's range), so there is no clean fast path here.
    """
    if src.size == 0:
        return 0, 0, 0, 0.0
    overflow = nan = inf = 0
    max_error = 0.0
    for start in _slices(src.size):
        s = src[start:start + _CHUNK]
        d = dst[start:start + _CHUNK]
        finite = np.isfinite(d)
        if finite.all():
            max_error = max(max_error, _max_error(s, d))
            continue
        if s.dtype.kind == "f":
            nan += int(np.isnan(s).sum())
            inf += int(np.isinf(s).sum())
            overflow += int((np.isfinite(s) & ~finite).sum())
        else:
            overflow += int((~finite).sum())
        max_error = max(max_error, _max_error(s, d, finite))
    return overflow, nan, inf, max_error


# float32 -> float16 bit patterns: the largest |x| that casts to a finite float16 without rounding past 65504, and
# the smallest normal float16 (2**-14) as float32 bits.
_HALF_MAX_BITS = 0x477FE000
_HALF_NORMAL_BITS = 0x38800000


def _half_chunk(s: np.ndarray, d: np.ndarray, m: np.ndarray, r: np.ndarray, o: np.ndarray) -> float | None:
    """Casts a float32 chunk `s` into the float16 `d` and returns the largest |d - s|, or None (d untouched) when
    a value is NaN, inf or beyond 65504: those chunks go through numpy's cast and the counting path.

    numpy casts float32 to float16 one value at a time (about 2 ns each, the hot spot of a float16 dump); here it
    is done with whole-chunk integer operations in three uint32 scratch buffers `m`, `r`, `o`. Round to nearest
    even on the float32 bits, the same IEEE rounding numpy does: checked bit for bit, and the error too, against
    numpy on every finite float32 of magnitude up to 65504. The float32 rounded value `r` is a by-product, so the
    cast error needs no float16 -> float32 conversion back (numpy's is as slow as the forward one).
    """
    a = s.view(np.uint32)
    np.bitwise_and(a, 0x7FFFFFFF, out=m)  # |s|
    if int(m.max()) > _HALF_MAX_BITS:  # NaN and inf have the largest magnitudes as bits too
        return None
    # Normal float16 range: round the 23-bit mantissa to 10 bits, ties to even (add 0xFFF plus the lowest kept bit).
    np.right_shift(m, 13, out=r)
    np.bitwise_and(r, 1, out=r)
    np.add(r, m, out=r)
    np.add(r, 0xFFF, out=r)
    np.bitwise_and(r, 0xFFFFE000, out=r)  # |s| rounded, as float32 bits (a mantissa carry bumps the exponent)
    np.subtract(r, 0x38000000, out=o)  # rebias the exponent from 127 to 15
    np.right_shift(o, 13, out=o)
    if int(m.min()) < _HALF_NORMAL_BITS:
        # Subnormal float16 (and zero): steps of 2**-24, which is the float32 spacing at 0.5, so adding 0.5 rounds
        # there (ties to even, in hardware) and the float16 bits are the low bits of the sum.
        small = np.flatnonzero(m < _HALF_NORMAL_BITS)
        shifted = m[small].view(np.float32) + np.float32(0.5)
        o[small] = shifted.view(np.uint32) - np.uint32(0x3F000000)
        r[small] = (shifted - np.float32(0.5)).view(np.uint32)
    error = r.view(np.float32)
    # |d| - |s| has the magnitude of d - s: rounding keeps the sign (a value rounded to zero becomes a signed zero).
    np.subtract(error, m.view(np.float32), out=error)
    largest = max(float(error.max()), -float(error.min()))
    np.right_shift(a, 16, out=m)
    np.bitwise_and(m, 0x8000, out=m)  # the sign, in its float16 place
    np.bitwise_or(o, m, out=o)
    np.copyto(d.view(np.uint16), o, casting="unsafe")
    return largest


def _cast_float_target(src: np.ndarray, dst: np.ndarray) -> tuple[int, int, int, float]:
    """Casts `src` into `dst` (a float dtype) chunk by chunk and returns (overflow, nan, inf, max_error).

    Each chunk is cast, checked and measured while it is in the cache, instead of a whole-batch cast followed by
    whole-batch checks that each read the batch from memory again. The clean case (every value finite in the
    target) costs one error pass: that difference is finite exactly when the source value and its cast are; only
    a chunk where it is not is counted value by value, by _check_float_target.
    """
    if src.size == 0:
        return 0, 0, 0, 0.0
    overflow = nan = inf = 0
    max_error = 0.0
    size = min(_CHUNK, src.size)
    half = src.dtype == np.dtype(np.float32) and dst.dtype == np.dtype(np.float16)
    exact = np.can_cast(src.dtype, dst.dtype, "safe")
    if half:
        m, r, o = (np.empty(size, dtype=np.uint32) for _ in range(3))
    elif not exact:
        work = np.empty(size, dtype=_error_dtype(src.dtype, dst.dtype))
    for start in _slices(src.size):
        s = src[start:start + _CHUNK]
        d = dst[start:start + _CHUNK]
        n = s.size
        clean: float | None = None
        if half:
            clean = _half_chunk(s, d, m[:n], r[:n], o[:n])
        else:
            np.copyto(d, s, casting="unsafe")
            if exact:
                # A widening (or identity) cast is exact and cannot overflow: only NaN and inf are to be counted,
                # and min and max (which NaN propagates through) rule them out.
                if s.dtype.kind != "f" or (np.isfinite(float(s.min())) and np.isfinite(float(s.max()))):
                    clean = 0.0
            else:
                w = work[:n]
                np.copyto(w, d, casting="unsafe")
                np.subtract(w, s, out=w, casting="unsafe")
                high, low = float(w.max()), float(w.min())
                if np.isfinite(high) and np.isfinite(low):
                    clean = max(high, -low)
        if clean is not None:
            max_error = max(max_error, clean)
            continue
        if half:
            np.copyto(d, s, casting="unsafe")
        chunk = _check_float_target(s, d)
        overflow, nan, inf = overflow + chunk[0], nan + chunk[1], inf + chunk[2]
        max_error = max(max_error, chunk[3])
    return overflow, nan, inf, max_error


def _check_int_target(src: np.ndarray, dst: np.ndarray, target: np.dtype) -> tuple[int, int, int, int, float]:
    """(nan, inf, truncated, out_of_range, max_error) of a cast to an integer dtype."""
    info = np.iinfo(target)
    nan = inf = truncated = out_of_range = 0
    max_error = 0.0
    for start in _slices(src.size):
        s = src[start:start + _CHUNK]
        d = dst[start:start + _CHUNK]
        if s.dtype.kind == "f":
            finite = np.isfinite(s)
            nan += int(np.isnan(s).sum())
            inf += int(np.isinf(s).sum())
            wide = s.astype(np.float64)
            in_range = finite & (wide >= info.min) & (wide <= info.max)
            out_of_range += int((finite & ~in_range).sum())
            truncated += int((in_range & (np.trunc(wide) != wide)).sum())
            max_error = max(max_error, _max_error(s, d, in_range))
        elif s.dtype.kind == "b":
            continue
        else:
            # numpy 2 compares integer arrays with out-of-range Python ints correctly, so no wrapping here.
            out_of_range += int((~((s >= info.min) & (s <= info.max))).sum())
    return nan, inf, truncated, out_of_range, max_error


def checked_cast_into(out: np.ndarray, src: np.ndarray) -> CastReport:
    """Casts `src` into the preallocated `out` (same element count) and reports what the cast lost.

    Writing into `out` lets the caller cast straight into a padded batch buffer: one pass, no extra copy.
    """
    source = np.dtype(src.dtype)
    target = np.dtype(out.dtype)
    flat_src = np.ascontiguousarray(src).reshape(-1)
    if not out.flags.c_contiguous:
        raise ValueError("checked_cast_into needs a C-contiguous output buffer")
    flat_out = out.reshape(-1)
    if flat_src.size != flat_out.size:
        raise ValueError(f"cast of {flat_src.size} values into a buffer of {flat_out.size}")
    report = CastReport(source_dtype=source.name, target_dtype=target.name, values=int(flat_src.size))
    # The losses are counted below; numpy's own warnings about them would only repeat it on stderr.
    with np.errstate(all="ignore"):
        if target.kind == "f":
            overflow, nan, inf, max_error = _cast_float_target(flat_src, flat_out)
            return replace(report, overflow=overflow, nan=nan, inf=inf, max_error=max_error)
        np.copyto(flat_out, flat_src, casting="unsafe")
        return _check(report, flat_src, flat_out, source, target)


def check_unchanged(src: np.ndarray) -> CastReport:
    """What `checked_cast_into` reports for a cast of `src` to its own dtype, without the copy: for a caller that
    can write `src` itself (same dtype, C-contiguous, little-endian).

    The values pass unchanged, so the only losses are NaN and inf in a float source (counted whatever the target,
    as every cast counts them). Their absence is settled by a min and a max (NaN propagates through both, inf shows
    as either), each a fast pass that reads and writes nothing else; only a batch holding one is counted value by
    value.
    """
    source = np.dtype(src.dtype)
    if not src.flags.c_contiguous:
        raise ValueError("check_unchanged needs a C-contiguous array")
    flat = src.reshape(-1)
    report = CastReport(source_dtype=source.name, target_dtype=source.name, values=int(flat.size))
    if source.kind != "f" or flat.size == 0:
        return report  # integers and bools cast to their own dtype are always exact and in range
    with np.errstate(all="ignore"):
        if np.isfinite(float(flat.min())) and np.isfinite(float(flat.max())):
            return report
        overflow, nan, inf, max_error = _check_float_target(flat, flat)
    return replace(report, overflow=overflow, nan=nan, inf=inf, max_error=max_error)


def _check(report: CastReport, flat_src: np.ndarray, flat_out: np.ndarray, source: np.dtype,
           target: np.dtype) -> CastReport:
    # Float targets are cast and checked together, chunk by chunk, in _cast_float_target.
    if target.kind in "iu":
        nan, inf, truncated, out_of_range, max_error = _check_int_target(flat_src, flat_out, target)
        return replace(report, nan=nan, inf=inf, truncated=truncated, out_of_range=out_of_range, max_error=max_error)
    if target.kind == "b":
        if source.kind == "b":
            return report
        valid = (flat_src == 0) | (flat_src == 1)
        nan = int(np.isnan(flat_src).sum()) if source.kind == "f" else 0
        return replace(report, nan=nan, out_of_range=int((~valid).sum()) - nan)
    raise ValueError(f"unsupported cast target {target}")


def checked_cast(src: np.ndarray, dtype_name: str) -> tuple[np.ndarray, CastReport]:
    """`src` cast to `dtype_name` (little-endian), with the report of what the cast lost."""
    out = np.empty(src.shape, dtype=dtype(dtype_name).np_dtype)
    return out, checked_cast_into(out, src)


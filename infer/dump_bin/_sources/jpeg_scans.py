"""How many scans a JPEG holds, counted from its markers before it is decoded: a progressive JPEG's decoder walks
every block of the image once per scan, so a file of a few hundred kB holding thousands of near-empty scans of a
large image keeps a decoder busy for minutes (each AC scan of a 9000 x 9000 greyscale image costs under 100 bytes
and about 40 ms of libjpeg-turbo's time). libjpeg-turbo has a scan limit of its own (TurboJPEG's
``TJPARAM_SCANLIMIT``, djpeg's ``-maxscans``), which Pillow does not set."""

from __future__ import annotations

from pathlib import Path

MAX_SCANS = 500  # what libjpeg-turbo's own tools refuse past; libjpeg's default progressive script has 10
_SOS = b"\xff\xda"  # start of scan: in entropy-coded data 0xFF is followed by 0x00 or a restart marker, never 0xDA
_CHUNK = 1 << 20


def count_scans(path: str | Path, most: int = MAX_SCANS) -> int:
    """The start-of-scan markers in `path`, read a chunk at a time and counted up to `most` + 1 (past that the
    number does not matter). A marker's bytes inside an APP or COM segment count too: an over-count a real photo
    never comes near."""
    found = 0
    tail = b""
    with open(path, "rb") as handle:
        while found <= most:
            chunk = handle.read(_CHUNK)
            if not chunk:
                break
            data = tail + chunk
            found += data.count(_SOS)
            tail = data[-1:]  # a marker split across two chunks is counted with the next (0xDA starts none)
    return found

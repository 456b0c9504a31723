"""The Python packages infer runs on, each against the range pyproject.toml declares (the one tested), from the
installed distributions' metadata: nothing is imported."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

from infer.doctor.result import PackageCheck

DISTRIBUTION = "infer"


_RANGE_PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tensorflow", ("tensorflow-cpu", "tensorflow", "tensorflow-aarch64", "tensorflow-macos")),
    ("tf2onnx", ("tf2onnx",)),
    ("onnx", ("onnx",)),
    ("onnxruntime", ("onnxruntime", "onnxruntime-gpu")),
    ("numpy", ("numpy",)),
    ("xxhash", ("xxhash",)),
)


def _declared_ranges() -> tuple[dict[str, str], str]:
    """Distribution name -> specifier from infer's own metadata (pyproject's dependencies), and Requires-Python."""
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
        requires_python = importlib.metadata.metadata(DISTRIBUTION)["Requires-Python"] or ""
    except importlib.metadata.PackageNotFoundError:
        return {}, ""
    ranges: dict[str, str] = {}
    for line in requirements:
        requirement, _, marker = line.partition(";")
        if "extra ==" in marker:
            continue
        match = re.match(r"\s*([A-Za-z0-9._-]+)\s*(.*)$", requirement)
        if match:
            # Lower bound first, as people write ranges: ">=2.16,<2.22".
            clauses = sorted((c.strip() for c in match.group(2).split(",") if c.strip()), key=lambda c: c[0] != ">")
            specifier = ",".join(clauses)
            ranges.setdefault(match.group(1).lower(), specifier)
    return ranges, requires_python


def _installed_version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


def check_packages() -> tuple[tuple[PackageCheck, ...], str]:
    ranges, requires_python = _declared_ranges()
    checks = []
    for name, distributions in _RANGE_PACKAGES:
        found = next(((d, v) for d in distributions if (v := _installed_version(d))), ("", ""))
        declared = next((ranges[d] for d in (found[0], *distributions) if d in ranges), "")
        checks.append(PackageCheck(name=name, distribution=found[0], version=found[1], tested_range=declared))
    return tuple(checks), requires_python

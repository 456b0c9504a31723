"""Several datasets of one model compared, one per gear (`compare_gears`): each gear's own result, and one verdict
across them (true when every gear passed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infer.compare.result import CompareResult

GEARS_SCHEMA = "infer.compare-gears"


@dataclass(frozen=True)
class GearComparison:
    """One dataset's comparison, named by its gear (``batch 4``; the dataset folder for a static model's)."""

    gear: str
    result: CompareResult
    tag: str = ""  # the gear as a folder name (``b4``, ``224x448``; the dataset folder's for a static model's)


@dataclass(frozen=True)
class GearsCompareResult:
    """Every gear's comparison, in the order given."""

    gears: tuple[GearComparison, ...]

    @property
    def passed(self) -> bool:
        return all(item.result.passed for item in self.gears)

    def __bool__(self) -> bool:
        return self.passed

    def verdict(self) -> str:
        """``PASSED: 2 gears (batch 4, batch 8)``, or ``FAILED: batch 8: <its verdict>; ...`` for each failing."""
        if self.passed:
            return f"PASSED: {len(self.gears)} gears ({', '.join(item.gear for item in self.gears)})"
        return "FAILED: " + "; ".join(f"{item.gear}: {item.result.verdict().removeprefix('FAILED: ')}"
                                      for item in self.gears if not item.result.passed)

    def headline(self) -> str:
        """The verdict across the gears in one short line: ``PASSED: 2 gears (batch 4, batch 8)``, or ``FAILED: 1 of
        2 gears: batch 8 (fp16 overflow (or underflow) inside the network)``, each failing gear by its cause, else
        its first reason; every gear's own verdict and details above it."""
        if self.passed:
            return self.verdict()
        failing = [item for item in self.gears if not item.result.passed]
        return (f"FAILED: {len(failing)} of {len(self.gears)} gears: "
                + "; ".join(f"{item.gear} ({item.result.cause or item.result.fail_reasons[0]})" for item in failing))


    def to_json(self) -> dict[str, Any]:
        return {"schema": GEARS_SCHEMA, "version": 1, "passed": self.passed, "verdict": self.verdict(),
                "headline": self.headline(),
                "gears": [{"gear": item.gear, "report": item.result.to_json()} for item in self.gears]}

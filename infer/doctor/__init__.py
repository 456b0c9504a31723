"""`infer doctor`: what is installed, whether it is the combination we test, and what will run for real."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.doctor._doctor import diagnose
    from infer.doctor.result import DoctorReport

__all__ = [
    "DoctorReport", "diagnose",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "DoctorReport": "infer.doctor.result",
    "diagnose": "infer.doctor._doctor",
})

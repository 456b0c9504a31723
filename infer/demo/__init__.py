"""`infer demo`: a small ResNet-style checkpoint and a labelled image set, through every stage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.demo._run import DemoResult, run_demo

__all__ = [
    "DemoResult", "run_demo",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "DemoResult": "infer.demo._run",
    "run_demo": "infer.demo._run",
})

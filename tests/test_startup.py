"""`infer --help` answers without importing any heavy framework (DESIGN.md: well under a second)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("tensorflow", "onnxruntime", "tf2onnx", "onnx", "matplotlib", "PIL")

PROBE = """
import sys
from infer.cli.app import main
try:
    main(["--help"])
except SystemExit:
    pass
for name in {heavy!r}:
    if name in sys.modules:
        print("imported:", name)
"""


def test_help_imports_no_heavy_framework() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True,
                            timeout=120, check=True)
    assert "Usage: infer" in result.stdout
    assert [line for line in result.stdout.splitlines() if line.startswith("imported:")] == []

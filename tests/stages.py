"""A model source taken through every stage the way a user would: freeze -> convert (the ONNX stand-in,
force_fp32) -> dump-bin (random samples per input) -> run -> compare, each by the `infer` CLI in-process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from infer.contract import ModelContract, load_contract
from tests.cli import Outcome, run_cli


@dataclass(frozen=True)
class StagesResult:
    contract: ModelContract  # as convert left it
    freeze: Outcome
    compare: Outcome

    @property
    def verdict_line(self) -> str:
        return self.compare.verdict

    @property
    def verdict(self) -> str:
        """The verdict itself, PASSED or FAILED: ..., without what the line says after it."""
        return self.verdict_line.split(" | ")[0]


def run_every_stage(capsys: pytest.CaptureFixture[str], source: Path | str, folder: Path, *freeze_args: str,
                    samples: int = 3) -> StagesResult:
    """Each stage must succeed; compare's outcome is returned for the caller to judge."""
    model = folder / "model"
    frozen = run_cli(capsys, "freeze", str(source), "-o", str(model), *freeze_args)
    assert frozen.code == 0, frozen.err
    converted = run_cli(capsys, "convert", str(model / "model.json"), "--target", "onnx",
                        "--precision-mode", "force_fp32")
    assert converted.code == 0, converted.err
    contract = load_contract(model / "model.json")
    feeds = [item for seed, spec in enumerate(contract.inputs) for item in ("--source", f"{spec.name}=random:{seed}")]
    dumped = run_cli(capsys, "dump-bin", "-m", str(model / "model.json"), "-o", str(folder / "bins"), *feeds,
                     "--samples", str(samples))
    assert dumped.code == 0, dumped.err
    ran = run_cli(capsys, "run", str(model / "model.json"), "--input", str(folder / "bins"), "-o", str(folder / "out"))
    assert ran.code == 0, ran.err
    compared = run_cli(capsys, "compare", str(model / "model.json"), "--input", str(folder / "bins"),
                       "--actual", str(folder / "out"))
    return StagesResult(contract=load_contract(model / "model.json"), freeze=frozen, compare=compared)

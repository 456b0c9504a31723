"""tune-precision searches only among the ops the chip can keep in fp32, by the precision plan of its operator
table: the same overflowing Exp is kept on a chip with an fp32 Exp, and left out (and named) on one without."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infer.contract import ModelContract, load_contract
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_exp
from tests.cli import run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exp_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, Path]:
    folder = tmp_path_factory.mktemp("exp")
    contract = write_frozen(folder / "model", build_exp, ("x:0",), ("out:0",))
    return contract, write_bins(folder / "bins", "x:0", (2, 16), files=2, uniform=(11.5, 12.5))


def _copy(contract: ModelContract, folder: Path) -> ModelContract:
    shutil.copytree(contract.folder, folder)
    return load_contract(folder / "model.json")


def test_a_chip_with_an_fp32_kernel_keeps_the_op(exp_model: tuple[ModelContract, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = exp_model
    copy = _copy(contract, tmp_path / "user")
    outcome = run_cli(capsys, "tune-precision", copy.path, "--input", bins, "-o", tmp_path / "tuned",
                      "--soc-version", "Ascend910B2")
    assert outcome.code == 0, outcome.out + outcome.err
    assert (tmp_path / "tuned" / "keep_dtype.cfg").read_text().splitlines() == ["grown", "out"]
    report = json.loads((tmp_path / "tuned" / "tune.json").read_text())
    assert (report["chip"], report["tunable_ops"], report["not_keepable"]) == ("Ascend910B2", 2, [])
    assert "--soc_version=Ascend910B2" in (tmp_path / "tuned" / "atc_command.txt").read_text()
    handed = load_contract(tmp_path / "tuned" / "model" / "model.json")
    assert handed.converted is not None and handed.converted.plan().chip == "Ascend910B2"  # type: ignore[union-attr]


def test_a_chip_without_one_leaves_it_out_and_says_why(exp_model: tuple[ModelContract, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = exp_model
    copy = _copy(contract, tmp_path / "user")
    outcome = run_cli(capsys, "tune-precision", copy.path, "--input", bins, "-o", tmp_path / "tuned")
    assert outcome.code == 1, outcome.out + outcome.err
    assert ("left out of the search: 1 op in fp16 that Ascend310 cannot keep in fp32 (no fp32 kernel): grown (Exp)"
            in outcome.err.splitlines())
    report = json.loads((tmp_path / "tuned" / "tune.json").read_text())
    assert report["chip"] == "Ascend310" and report["tunable_ops"] == 1
    assert [op["name"] for op in report["not_keepable"]] == ["grown"]
    assert all("grown" not in candidate["ops"] for candidate in report["candidates"])
    assert report["reason"].startswith("no set of fp32 ops passes: even with all 1 op Ascend310 can keep in fp32 "
                                       "kept so, compare fails, and 1 op in fp16 has no fp32 kernel there "
                                       "(grown (Exp))")

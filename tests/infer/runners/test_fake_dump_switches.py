"""The fakes take the real tools' own dump switches as the real ones do (Ascend/tools 9d6da90): msame's
``--dump true`` writes ./acl.json (dump_mode output, dump_path <--output>/dump) and deletes it after; ais_bench's
``--dump 1`` writes <--output>/acl.json (dump_mode all) and its warm-up run is dumped too. infer uses neither
(tests/infer/test_run_dump.py), but a fake that ignored them would let a test pass that the real tools fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.npu_dump import read_npu_dump, walk_dump_folder
from infer.contract import ModelContract
from tests.builders.bins import write_dataset
from tests.infer.run_data import FAKES
from tests.npu_models import npu_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return npu_model(tmp_path_factory.mktemp("npu") / "model")


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": os.pathsep.join([str(FAKES), str(Path(sys.executable).parent),
                                                   os.environ.get("PATH", "")]), "PYTHONPATH": str(FAKES)}


def _bins(folder: Path) -> Path:
    x = np.random.default_rng(2).standard_normal((2, 8, 8, 3)).astype(np.float32)
    return write_dataset(folder, {"x:0": [x]}).root / "x"


def test_fake_msame_dump_true_writes_its_own_acl_json_and_deletes_it(model: ModelContract, tmp_path: Path) -> None:
    assert model.converted is not None
    work = tmp_path / "cwd"
    work.mkdir()
    done = subprocess.run(["msame", "--model", str(model.folder / model.converted.path), "--input",
                           str(_bins(tmp_path / "bins")), "--output", str(tmp_path / "out"), "--dump", "true"],
                          cwd=work, env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert "[ERROR]" not in done.stdout and "delete acl.json success" in done.stdout, done.stdout + done.stderr
    assert not (work / "acl.json").exists()
    entries = walk_dump_folder(tmp_path / "out" / "dump").entries
    assert {entry.location.model_name for entry in entries} == {"model"}
    conv = read_npu_dump(next(e.path for e in entries if e.name.op_name == "conv_Conv2D"))
    assert conv.outputs and not conv.inputs  # dump_mode output


def test_fake_ais_bench_dump_1_writes_an_all_mode_acl_json_and_dumps_its_warm_up(model: ModelContract,
                                                                               tmp_path: Path) -> None:
    assert model.converted is not None
    done = subprocess.run([sys.executable, "-m", "ais_bench", "--model", str(model.folder / model.converted.path),
                           "--input", str(_bins(tmp_path / "bins")), "--output", str(tmp_path / "out"),
                           "--dump", "1"], env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    written = json.loads((tmp_path / "out" / "acl.json").read_text())
    assert written["dump"]["dump_mode"] == "all" and written["dump"]["dump_list"] == [{"model_name": "model"}]
    entries = walk_dump_folder(tmp_path / "out" / "dump").entries
    assert sorted({entry.location.step for entry in entries}) == ["0", "1"]  # the warm-up run, then the file

"""`infer pipeline run` with [remote]: convert and run on the host (a real sshd on 127.0.0.1), every other stage here,
a PASSED verdict, and a report that lists the flow as `infer ... --host` commands and what ran there instead of the
atc/msame block for by hand; and run --dump on the host, its dump fetched beside the outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.npu_dump import walk_dump_folder
from infer.contract import ModelContract
from infer.pipeline import run_pipeline
from infer.run import RunOptions, run_model
from infer.run.record import load_run
from tests.builders.bins import write_dataset
from tests.cli import run_cli
from tests.infer.remote.sshd import SshServer
from tests.models import build_small_cnn
from tests.npu_models import npu_model

pytestmark = pytest.mark.slow


def test_a_pipeline_with_remote_builds_and_runs_the_om_there_and_passes(
        sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    built = build_small_cnn(tmp_path / "ckpt")
    ssh = ", ".join(f'"{option}"' for option in sshd.options().ssh_options)
    pipeline = tmp_path / "pipeline.toml"
    pipeline.write_text(f"""
[model]
source = "ckpt/model.ckpt"
outputs = ["probs:0"]
inputs = ["images:0"]
batch = 2

[data]
source = "random:0"
samples = 6

[convert]
precision_mode = "force_fp32"

[remote]
host = "{sshd.host}"
ssh_options = [{ssh}]
""")
    assert built.prefix == tmp_path / "ckpt" / "model.ckpt"
    outcome = run_cli(capsys, "pipeline", "run", pipeline)
    assert outcome.code == 0, outcome.err
    result = run_pipeline(pipeline)  # every stage unchanged: its facts, as the report has them
    assert result.passed and result.verdict.startswith("PASSED | golden: tensorflow model.pb")
    assert "actual: msame model.om force_fp32" in result.verdict
    report = result.report_path.read_text()
    host = f"--host {sshd.host}"
    commands = report.split("the same, stage by stage:\n", 1)[1].splitlines()
    assert commands[2].startswith("  infer convert ") and host in commands[2]
    assert commands[4].startswith("  infer run ") and host in commands[4]
    assert host not in commands[5]  # compare runs here, on what came back
    assert "by hand" not in report
    there = report.split(f"on {sshd.host} (--host), infer ran:\n", 1)[1].splitlines()
    workdir = sshd.home / ".infer-remote"
    assert there[0].startswith(f"  atc --model={workdir}/models/") and "--soc_version=Ascend310P3" in there[0]
    assert there[1].startswith(f"  msame --model {workdir}/models/om-")
    stages = {line.split()[0]: line for line in outcome.out.splitlines() if line[:1].isalpha() and "  " in line}
    assert f"msame on {sshd.host}: 6 samples" in stages["run"]


def test_run_dump_on_the_host_fetches_the_dump_beside_the_outputs(
        fresh_env: SshServer, tmp_path: Path) -> None:
    sshd = fresh_env
    sshd.fake_env("export FAKE_NPU_SMI=310_21.0.4.txt\n")  # the om is built for Ascend310
    model: ModelContract = npu_model(tmp_path / "npu" / "model")
    rng = np.random.default_rng(5)
    bins = write_dataset(tmp_path / "bins", {"x:0": [rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
                                                     for _ in range(2)]}).root
    run = run_model(model.path, bins, tmp_path / "out", RunOptions(dump=True, dump_batch="000001",
                                                                    remote=sshd.options()))
    record = load_run(run.folder)
    assert record.completed and record.dump is not None and record.remote is not None
    assert record.dump.stem == "000001" and record.dump.files > 0
    dumped = walk_dump_folder(run.folder / "dump").entries
    assert len(dumped) == record.dump.files and any(e.name.op_name == "conv_Conv2D" for e in dumped)
    # the run's acl.json keeps the local dump folder; the host's named its own
    assert str((run.folder / "dump").resolve()) in (run.folder / "dump" / "acl.json").read_text()
    assert record.dump.tool_command[0] == "msame" and record.remote.host == sshd.host

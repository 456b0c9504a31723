"""`infer pipeline tune`: tune-precision on the pipeline's own model and dataset, with its [tune] table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_energy
from tests.cli import run_cli

pytestmark = pytest.mark.slow


def test_the_tune_table_reaches_tune_precision_on_the_pipelines_work(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The overflow model (x*x past 65504) fails under force_fp16; [tune] max_ops and samples reach the search,
    which finds the ops to keep in fp32 on the bins `pipeline run` dumped, and writes into WORK/tune."""
    frozen = write_frozen(tmp_path / "frozen", build_energy, ("x:0",), ("energy:0",))
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.uniform(250, 350, size=(6, 64)).astype(np.float32))
    config = tmp_path / "pipeline.toml"
    config.write_text(f'[model]\nsource = "{frozen.pb_path}"\noutputs = ["energy:0"]\ninputs = ["x:0"]\n\n'
                      '[data]\nsource = "x.npy"\n\n[convert]\ntarget = "onnx"\n\n'
                      '[tune]\nsamples = 2\nmax_ops = 6\nmode = "linear"\n')
    outcome = run_cli(capsys, "pipeline", "tune", config)
    assert outcome.code == 2 and outcome.error_line.startswith(f"error: {config}: no ")
    assert f"hint: infer pipeline run {config} first" in outcome.err
    assert run_cli(capsys, "pipeline", "run", config).code == 1  # force_fp16 fails: what tune is for
    outcome = run_cli(capsys, "pipeline", "tune", config)
    assert outcome.code == 0, outcome.err
    assert outcome.out.splitlines()[-1] == "FOUND"
    report = json.loads((tmp_path / "work" / "tune" / "tune.json").read_text())
    assert report["found"] and report["mode"] == "linear" and len(report["keep_dtype"]) <= 6
    assert {c["dataset"] for c in report["candidates"]} == {"subset", "whole"}  # samples = 2: a subset first
    assert (tmp_path / "work" / "tune" / "keep_dtype.cfg").is_file()

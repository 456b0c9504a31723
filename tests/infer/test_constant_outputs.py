"""Outputs that do not depend on the input (a collapsed model: every sample the same) pass every metric; compare
says so in its warnings (once), report.json and the pipeline's compare line. A model whose outputs
vary gets no such warning."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from infer.compare._judge.constant_outputs import _Sameness
from infer.pipeline._runner import run_pipeline
from infer.pipeline.config import config_from_dict
from tests.cli import run_cli


def _checkpoint(folder: Path, *, collapsed: bool) -> Path:
    """x (?,6) -> probs (?,4): a ReLU layer whose bias is -1000 when `collapsed` (dead for every input, so probs
    is softmax of the output bias alone), else a working one."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 6], name="x")
        hidden = tf.nn.relu(tf.matmul(x, tf1.get_variable("w1", [6, 8], initializer=tf1.random_normal_initializer(
            seed=5))) + (-1000.0 if collapsed else 0.0))
        logits = tf.matmul(hidden, tf1.get_variable("w2", [8, 4], initializer=tf1.random_normal_initializer(
            seed=6))) + tf.constant([0.5, -0.25, 1.0, 0.0])
        tf.nn.softmax(logits, name="probs")
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            prefix = folder / "model.ckpt"
            tf1.train.Saver().save(session, str(prefix))
    return prefix


def _pipeline(folder: Path, collapsed: bool, source: str = "random:3") -> tuple[str, Path]:
    prefix = _checkpoint(folder, collapsed=collapsed)
    config = config_from_dict({"model": {"source": str(prefix), "outputs": ["probs:0"], "batch": 2},
                               "data": {"source": source, "samples": 6}}, folder / "pipeline.toml")
    result = run_pipeline(config)
    line = next(s.summary for s in result.stages if s.stage == "compare")
    return line, config.work_dir


@pytest.mark.slow
@pytest.mark.parametrize("collapsed", [True, False])
def test_constant_outputs_are_warned_of_everywhere(collapsed: bool, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    line, work = _pipeline(tmp_path, collapsed)
    warning = "probs:0 is the same for every sample in TensorFlow's outputs and the converted model's"
    assert line.split(" -> ")[1].startswith("PASSED")  # the conversion itself is faithful either way
    assert (warning in line) == collapsed, line
    report = json.loads(next(work.rglob("report.json")).read_text())
    assert report["passed"] is True
    assert [c["output"] for c in report["constant_outputs"]] == (["probs:0"] if collapsed else [])
    assert bool(report["warnings"]) == collapsed and warning not in report["verdict_line"]  # said once: a warning
    if collapsed:
        assert report["constant_outputs"][0]["golden"] and report["constant_outputs"][0]["actual"]
    outcome = run_cli(capsys, "compare", work / "model" / "model.json", "-i", work / "bins", "-a", work / "out")
    assert outcome.code == 0
    assert (f"warning: {warning}" in outcome.err) == collapsed, outcome.err
    assert warning not in outcome.out  # on stderr, once; not repeated in the verdict


@pytest.mark.slow
def test_one_sample_repeated_is_said_to_be_one(tmp_path: Path) -> None:
    """const: inputs make every sample the same: the outputs are, whatever the model; the warning says why."""
    line, work = _pipeline(tmp_path, False, source="const:0.5")
    assert "probs:0 is the same for every sample, as is every input: the dataset holds one sample repeated" in line
    report = json.loads(next(work.rglob("report.json")).read_text())
    assert report["constant_outputs"][0]["inputs_same"] is True


def test_sameness_is_within_float32_noise_and_needs_two_samples() -> None:
    base = np.array([0.25, 0.5, 0.25])
    for units, constant in [(np.stack([base, base + 1e-8]), True), (np.stack([base, base + 1e-3]), False),
                            (base[None], False), (np.stack([[np.nan, 1.0], [np.nan, 1.0]]), True),
                            (np.array([[1, 2], [1, 3]]), False), (np.array([[1, 2], [1, 2]]), True)]:
        seen = _Sameness()
        seen.take(units)
        assert seen.constant == constant, units

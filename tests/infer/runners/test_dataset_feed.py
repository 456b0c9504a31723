"""How each runner takes a whole dataset (`BaseRunner.take_dataset`) and what it checks before a sharded run's
workers start (`check_available`): asked of the runner, never read off its type."""

from __future__ import annotations

from pathlib import Path

import pytest

from infer.contract import ModelContract
from infer.run._runners.ais_bench import AisBenchRunner
from infer.run._runners.base import BaseRunner, RunnerError
from infer.run._runners.msame import MsameRunner
from infer.run._runners.onnxrt import OnnxRuntimeRunner
from infer.run._runners.tensorflow import TensorFlowRunner
from infer.run._runners.tool import ToolRunner
from tests.infer.run_data import hide_tools, two_input_model, use_fake_tools


class _Ways:
    """A feed that answers which way it was taken."""

    def batch_by_batch(self, runner: BaseRunner) -> tuple[str, BaseRunner]:
        return "batch by batch", runner

    def whole_folders(self, runner: ToolRunner) -> tuple[str, BaseRunner]:
        return "whole folders", runner


@pytest.fixture
def om(tmp_path: Path) -> ModelContract:
    return two_input_model(tmp_path / "model", "om")


def test_in_process_runners_take_a_dataset_batch_by_batch(onnx_small_cnn: ModelContract) -> None:
    for runner in (OnnxRuntimeRunner.from_contract(onnx_small_cnn), TensorFlowRunner(onnx_small_cnn)):
        assert runner.take_dataset(_Ways()) == ("batch by batch", runner)
        runner.check_available()  # nothing is loaded to check a framework: a worker finds out when it activates
        assert not runner.is_active


@pytest.mark.slow
@pytest.mark.parametrize("tool", [MsameRunner, AisBenchRunner])
def test_tools_take_the_whole_folders_and_are_looked_for_up_front(
        tool: type[ToolRunner], om: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = tool.from_contract(om)
    assert runner.take_dataset(_Ways()) == ("whole folders", runner)
    use_fake_tools(monkeypatch)
    runner.check_available()
    assert not runner.is_active
    hide_tools(monkeypatch, tmp_path)
    with pytest.raises(RunnerError, match=rf"^{runner.tool} is not installed"):
        tool.from_contract(om).check_available()

"""The runner contract itself, on a numpy runner: lifecycle, feed checks, output order."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from binio.spec import TensorSpec
from infer.run._runners.base import BaseRunner, RunnerError


class DoublingRunner(BaseRunner):
    backend = "numpy"

    def __init__(self) -> None:
        super().__init__((TensorSpec("x:0", "float32", (None, 3)),),
                         (TensorSpec("double:0", "float32", (None, 3)), TensorSpec("sum:0", "float32", (None,))))
        self.events: list[str] = []

    def activate_impl(self) -> None:
        self.events.append("activate")

    def infer_impl(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        x = feeds["x:0"]
        return [x * 2, x.sum(axis=1)]

    def deactivate_impl(self) -> None:
        self.events.append("deactivate")


def test_context_manager_activates_once_and_deactivates() -> None:
    runner = DoublingRunner()
    with runner as active:
        assert active is runner and runner.is_active
        runner.activate()
        double, total = runner.infer({"x:0": np.ones((4, 3), np.float32)})
    assert runner.events == ["activate", "deactivate"] and not runner.is_active
    np.testing.assert_array_equal(double, np.full((4, 3), 2, np.float32))
    np.testing.assert_array_equal(total, np.full((4,), 3, np.float32))
    assert runner.last_inference_seconds is not None and runner.last_inference_seconds >= 0


def test_infer_before_activate_is_refused() -> None:
    with pytest.raises(RunnerError, match=r"^numpy runner: infer\(\) before activate\(\)"):
        DoublingRunner().infer({"x:0": np.ones((1, 3), np.float32)})


@pytest.mark.parametrize(("feeds", "message"), [
    ({"y:0": np.ones((1, 3), np.float32)}, "numpy runner: no input named 'y:0'; inputs are: x:0"),
    ({}, "numpy runner: input x:0 not fed"),
    ({"x:0": np.ones((1, 3), np.float64)}, "numpy runner: input x:0: expected float32, got float64"),
    ({"x:0": np.ones((1, 4), np.float32)}, "numpy runner: input x:0: expected shape (?,3), got (1,4)"),
    ({"x:0": np.ones((3,), np.float32)}, "numpy runner: input x:0: expected shape (?,3), got (3)"),
])
def test_wrong_feeds_are_named(feeds: dict[str, np.ndarray], message: str) -> None:
    with DoublingRunner() as runner, pytest.raises(RunnerError) as caught:
        runner.infer(feeds)
    assert str(caught.value) == message

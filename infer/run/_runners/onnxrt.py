"""The ONNX stand-in run by ONNX Runtime: the CPU provider, or CUDA where onnxruntime-gpu finds a GPU."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from binio.errors import first_line
from binio.spec import TensorSpec, node_name
from infer.contract import ModelContract
from infer.run._runners.base import BaseRunner, RunnerError, model_checked_beside

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


def _session_names(specs: tuple[TensorSpec, ...], names: list[str], model: Path, what: str) -> list[str]:
    """The session's name for each spec: tf2onnx keeps ``images:0``; other converters drop the ``:0``."""
    matched: list[str] = []
    for spec in specs:
        found = next((n for n in names if n == spec.name), None) or next(
            (n for n in names if n == spec.node or node_name(n) == spec.node), None)
        if found is None:
            if len(specs) == len(names):  # same count, other names: the converter renamed them, order holds
                return list(names)
            raise RunnerError(f"{model}: no {what} named {spec.name}; the ONNX model's {what}s are: "
                              f"{', '.join(names)}", hint="re-run infer convert so model.json describes this model")
        matched.append(found)
    return matched


class OnnxRuntimeRunner(BaseRunner):
    """An ONNX model with the converted side's specs from the contract (or given directly)."""

    backend = "onnxrt"

    def __init__(
        self,
        model: Path,
        inputs: tuple[TensorSpec, ...],
        outputs: tuple[TensorSpec, ...],
        *,
        threads: int | None = None,
        device: int | None = None,
        model_check: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(inputs, outputs, model_check=model_check)
        self.model = Path(model)
        self.threads = threads
        self.device_id = device
        self._session: Any = None
        self._input_names: list[str] = []
        self._output_names: list[str] = []
        self._feed_names: dict[str, str] = {}
        self._provider = ""

    @classmethod
    def from_contract(
        cls, contract: ModelContract, *, threads: int | None = None, device: int | None = None
    ) -> OnnxRuntimeRunner:
        converted = contract.converted
        if converted is None or converted.target != "onnx":
            found = "nothing" if converted is None else converted.target
            raise RunnerError(f"{contract.path}: the onnxrt backend needs an ONNX model, convert produced {found}",
                              hint="run infer convert --target onnx")
        return cls(contract.folder / converted.path, converted.inputs, converted.outputs, threads=threads,
                   device=device, model_check=contract.check_converted_unchanged)

    @property
    def device(self) -> str:
        return self._provider

    def activate_impl(self) -> None:
        try:
            with model_checked_beside(self.model_check):
                self._make_session()
        except BaseException:
            self._session = None  # a session made from a stale file goes now, not with the runner
            raise

    def _make_session(self) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        options.log_severity_level = 3
        available = ort.get_available_providers()
        providers: list[Any] = [CPU]
        if CUDA in available:
            providers = [(CUDA, {"device_id": self.device_id or 0}), CPU]
        elif self.device_id is not None:
            raise RunnerError(f"--device {self.device_id}: this onnxruntime has no CUDA provider "
                              f"(it has {', '.join(available)})", hint="drop --device to run on the CPU, or "
                              "install onnxruntime-gpu on a machine with a GPU")
        if not self.model.is_file():
            raise RunnerError(f"{self.model}: no such ONNX model")
        try:
            self._session = ort.InferenceSession(str(self.model), sess_options=options, providers=providers)
        except Exception as exc:  # ORT raises its own untyped errors; the user gets one line
            raise RunnerError(f"{self.model}: ONNX Runtime cannot load it ({first_line(exc)})") from None
        self._provider = self._session.get_providers()[0]
        self._input_names = _session_names(self.inputs, [i.name for i in self._session.get_inputs()],
                                           self.model, "input")
        self._output_names = _session_names(self.outputs, [o.name for o in self._session.get_outputs()],
                                            self.model, "output")
        self._feed_names = dict(zip((spec.name for spec in self.inputs), self._input_names, strict=True))

    def infer_impl(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        session_feeds = {self._feed_names[name]: array for name, array in feeds.items()}
        return list(self._session.run(self._output_names, session_feeds))

    def deactivate_impl(self) -> None:
        self._session = None

"""The frozen pb in a ``tf.compat.v1`` session: the golden reference `compare` measures the converted model against.

Usable on its own: ``with TensorFlowRunner(contract) as runner: runner.infer({"images:0": batch})``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from binio.errors import first_line
from ckpt2pb.logs import quiet_tensorflow_logs
from ckpt2pb.protobuf import HostOpPolicy, read_graph_def
from infer.contract import ModelContract
from infer.run._runners.base import BaseRunner, RunnerError, model_checked_beside


class TensorFlowRunner(BaseRunner):
    """Runs the contract's frozen pb with its own (frozen-side) input and output specs."""

    backend = "tf"

    def __init__(self, contract: ModelContract, *, threads: int | None = None, check_sha256: bool = True,
                 allow_host_ops: bool = False) -> None:
        super().__init__(contract.inputs, contract.outputs,
                         model_check=contract.check_pb_unchanged if check_sha256 else None)
        self.contract = contract
        self.threads = threads
        self.allow_host_ops = allow_host_ops  # else a pb holding ops that act on the host is refused, by node
        self._session: Any = None
        self._fetches: list[Any] = []
        self._feed_tensors: dict[str, Any] = {}

    @property
    def device(self) -> str:
        return "TensorFlow CPU"

    def activate_impl(self) -> None:
        with model_checked_beside(self.model_check):
            graph = self._load_graph()

        def tensor(name: str) -> Any:
            try:
                return graph.get_tensor_by_name(name)
            except (KeyError, ValueError):
                raise RunnerError(f"{self.contract.pb_path}: no tensor {name} (named in {self.contract.path})",
                                  hint="re-run infer freeze so the contract matches the pb") from None

        self._feed_tensors = {spec.name: tensor(spec.name) for spec in self.inputs}
        self._fetches = [tensor(spec.name) for spec in self.outputs]
        import tensorflow as tf  # imported already, beside the model check

        tf1 = tf.compat.v1
        config = tf1.ConfigProto()
        if self.threads:
            config.intra_op_parallelism_threads = self.threads
            config.inter_op_parallelism_threads = self.threads
        self._session = tf1.Session(graph=graph, config=config)

    def _load_graph(self) -> Any:
        quiet_tensorflow_logs()  # before the import: TensorFlow's C++ side reads its level once, while starting
        import tensorflow as tf

        graph_def = read_graph_def(self.contract.pb_path, HostOpPolicy.of(self.allow_host_ops))
        graph = tf.Graph()
        try:
            with graph.as_default():
                tf.compat.v1.import_graph_def(graph_def, name="")
        except (ValueError, tf.errors.OpError) as exc:  # a pb whose nodes do not hold together
            raise RunnerError(f"{self.contract.pb_path}: TensorFlow {tf.__version__} cannot import the graph",
                              hint=first_line(exc)) from None
        return graph

    def infer_impl(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        feed_dict = {self._feed_tensors[name]: array for name, array in feeds.items()}
        results = self._session.run(self._fetches, feed_dict=feed_dict)
        return [np.asarray(result) for result in results]

    def deactivate_impl(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = None

"""TensorFlow fed an AIPP dataset: the uint8 bins through the declared float preprocessing, then the frozen pb.

The converted model takes the same bins through AIPP, so a comparison covers AIPP plus the model. The float
preprocessing is computed in float64 (the exact formula) and cast to the frozen input's dtype.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import TensorSpec
from infer.contract import ModelContract
from infer.model_aipp.config import model_aipp
from infer.model_aipp.declared import DeclaredPreprocessing
from infer.run._runners.base import BaseRunner


class DeclaredPreprocessingRunner(BaseRunner):
    """Takes uint8 bins for the inputs in `declared`, hands `inner` their declared float preprocessing."""

    def __init__(self, inner: BaseRunner, taken: Mapping[str, TensorSpec],
                 declared: Mapping[str, DeclaredPreprocessing]) -> None:
        super().__init__(tuple(taken.get(s.name, s) for s in inner.inputs), inner.outputs)
        self.inner = inner
        self.backend = inner.backend
        self.declared = dict(declared)
        self.wanted = {s.name: s for s in inner.inputs}

    @property
    def device(self) -> str:
        return f"{self.inner.device}, fed the declared float preprocessing of the uint8 bins"

    def check_available(self) -> None:
        self.inner.check_available()

    def activate_impl(self) -> None:
        self.inner.activate()

    def infer_impl(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        converted = {name: self.declared[name].apply(array).astype(self.wanted[name].dt.np_dtype)
                     if name in self.declared else array for name, array in feeds.items()}
        return self.inner.infer(converted)

    def deactivate_impl(self) -> None:
        self.inner.deactivate()


def with_declared_preprocessing(runner: BaseRunner, contract: ModelContract,
                                manifest: DatasetManifest | None) -> BaseRunner:
    """`runner` (the frozen pb's) wrapped to take an AIPP dataset's uint8 bins; `runner` itself otherwise.

    A model converted with AIPP whose dataset declares no preprocessing for its AIPP input is refused: TensorFlow
    would have nothing to compare the AIPP path with."""
    config = model_aipp(contract)
    if manifest is None:
        return runner
    declared: dict[str, DeclaredPreprocessing] = {}
    taken: dict[str, TensorSpec] = {}
    for item in manifest.inputs:
        record = item.preprocessing.get("declared")
        if isinstance(record, dict):
            declared[item.tensor] = DeclaredPreprocessing.from_json(record)
            taken[item.tensor] = TensorSpec(name=item.tensor, dtype=item.dtype, shape=(None, *item.shape[1:]),
                                            layout="NHWC")
    if config is not None:
        name = contract.inputs[config.related_input_rank].name
        held = manifest.find(name)
        if name not in declared and held is not None and held.dtype == "uint8":
            raise InferError(f"{manifest.path}: the uint8 bins of {name} (the model's AIPP input) declare no "
                             "preprocessing, so TensorFlow cannot be fed the same images",
                             hint=f"write them with infer dump-bin -m {contract.path} and the training "
                                  "--mean/--std/--scale/--color")
    if not declared:
        return runner
    return DeclaredPreprocessingRunner(runner, taken, declared)

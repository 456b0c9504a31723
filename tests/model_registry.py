"""Every model the suite builds, as a frozen pb and its contract: what the invariants of DEVELOPERS.md are held to.

A model a test writes to reproduce a situation (control flow, fused nodes, duplicate subgraphs, recurrent and
attention models, a detector) joins the registry, so that the invariants hold on it too: with every op planned fp32
the stand-in is TensorFlow's fp32, it converts in every precision mode, the same pb gives the same bytes
(tests/test_invariants.py). Builders take a folder and write model.pb + model.json into it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from infer.contract import ModelContract


def generic_feeds(contract: ModelContract, seed: int = 0) -> dict[str, np.ndarray]:
    """One batch for the contract's inputs: normal floats, integers 0 or 1 (valid ids, masks, segments), False."""
    rng = np.random.default_rng(seed)
    found: dict[str, np.ndarray] = {}
    for spec in contract.inputs:
        shape = tuple(2 if d is None else d for d in spec.shape)
        if spec.dtype == "bool":
            found[spec.name] = np.zeros(shape, np.bool_)
        elif spec.dtype.startswith(("int", "uint")):
            found[spec.name] = rng.integers(0, 2, shape).astype(spec.dtype)
        elif shape == ():
            found[spec.name] = np.asarray(0.5, spec.dtype)
        else:
            found[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return found


@dataclass(frozen=True)
class RegisteredModel:
    name: str
    build: Callable[[Path], ModelContract]
    feeds: Callable[[ModelContract], dict[str, np.ndarray]] = field(default=generic_feeds)


def _graph(build: Callable[[Any], None], inputs: tuple[str, ...], outputs: tuple[str, ...]
           ) -> Callable[[Path], ModelContract]:
    def write(folder: Path) -> ModelContract:
        from tests.builders.frozen import write_frozen

        return write_frozen(folder, build, inputs, outputs)

    return write


def _checkpoint(builder_name: str) -> Callable[[Path], ModelContract]:
    """A tests/models.py checkpoint builder's model, frozen by hand (batch 2)."""

    def write(folder: Path) -> ModelContract:
        from tests import models
        from tests.builders.frozen import freeze_by_hand

        built = getattr(models, builder_name)(folder / "ckpt")
        if isinstance(built, models.ReferenceModel):
            built = models.BuiltModel(prefix=built.path, inputs=built.inputs, outputs=built.outputs)
        return freeze_by_hand(built, folder / "model")

    return write


def _family(name: str) -> Callable[[Path], ModelContract]:
    """A recurrent or attention family of tests/infer/compare/recurrent_families.py (TF 1.x while loops)."""

    def write(folder: Path) -> ModelContract:
        from tests.infer.compare.recurrent_families import write_family

        return write_family(folder, name)

    return write


def _family_feeds(contract: ModelContract) -> dict[str, np.ndarray]:
    from tests.infer.compare.recurrent_families import family_feeds

    return family_feeds(contract)


def _bidirectional_rnn(version: int) -> Callable[[Path], ModelContract]:
    """tests/recurrent_models.py's bidirectional dynamic_rnn, frozen by infer freeze under control flow `version`
    (v2: a functional While over TensorLists)."""

    def write(folder: Path) -> ModelContract:
        from infer.freeze import FreezeOptions, freeze_model
        from tests.recurrent_models import build_bidirectional_rnn

        model = build_bidirectional_rnn(folder / "ckpt", version=version)
        return freeze_model(model.path, folder / "model", FreezeOptions(outputs=model.outputs, batch=model.batch)
                            ).contract

    return write


def _registered() -> tuple[RegisteredModel, ...]:
    from tests.atc_wrap.control_flow_graphs import CONTROL_FLOW_GRAPHS
    from tests.atc_wrap.fused_graphs import build_inserted_readers
    from tests.atc_wrap.twin_graphs import build_twin_energy, build_twin_mask_adders
    from tests.builders import graphs
    from tests.infer.compare.detector_graphs import build_detector, build_topk
    from tests.infer.compare.recurrent_families import FAMILIES

    found = [
        RegisteredModel("small_cnn", _checkpoint("build_small_cnn")),
        RegisteredModel("resnet_like", _checkpoint("build_resnet_like")),
        RegisteredModel("bert_like", _checkpoint("build_bert_like")),
        RegisteredModel("tf1_cond", _checkpoint("build_tf1_cond")),
        RegisteredModel("energy", _graph(graphs.build_energy, ("x:0",), ("energy:0",))),
        RegisteredModel("matmul_sum", _graph(graphs.build_matmul_sum, ("x:0",), ("out:0",))),
        RegisteredModel("two_in_two_out", _graph(graphs.build_two_in_two_out, ("a:0", "b:0"), ("head:0", "parts:1"))),
        RegisteredModel("inserted_readers", _graph(build_inserted_readers, ("x:0", "s:0"), ("out:0",))),
        RegisteredModel("twin_mask_adders", _graph(build_twin_mask_adders, ("x:0", "mask:0"), ("out:0",))),
        RegisteredModel("twin_energy", _graph(build_twin_energy, ("x:0",), ("out:0",))),
    ]
    found += [RegisteredModel(name, _graph(build, inputs, outputs))
              for name, (build, inputs, outputs) in sorted(CONTROL_FLOW_GRAPHS.items())]
    found += [RegisteredModel(f"family_{name}", _family(name), _family_feeds) for name in sorted(FAMILIES)]
    found += [RegisteredModel(f"bidirectional_rnn_v{version}", _bidirectional_rnn(version)) for version in (1, 2)]
    found += [RegisteredModel("detector_nms", _graph(build_detector, ("x:0",), ("det_boxes:0", "det_scores:0",
                                                                               "boxes:0"))),
              RegisteredModel("topk", _graph(build_topk, ("x:0",), ("top_values:0", "top_positions:0")))]
    return tuple(found)


MODELS: tuple[RegisteredModel, ...] = _registered()
MODEL_NAMES: tuple[str, ...] = tuple(model.name for model in MODELS)


def registered(name: str) -> RegisteredModel:
    return next(model for model in MODELS if model.name == name)

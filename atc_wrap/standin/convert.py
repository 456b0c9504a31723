"""The ONNX stand-in: the frozen pb converted by tf2onnx, with ATC's precision mode emulated, checked, written."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from atc_wrap.aipp.config import AippConfig, aipp_input_spec
from atc_wrap.aipp.onnx_stage import insert_aipp_stage
from atc_wrap.errors import ConvertError
from atc_wrap.plan import ConversionPlan
from atc_wrap.precision.modes import OutputType, PrecisionMode
from atc_wrap.precision.op_controls import controls_record
from atc_wrap.precision.plan import PrecisionPlan
from atc_wrap.standin._generated_names import (
    canonical_order,
    counter,
    name_shared_initializers,
    renumber_generated_names,
    restart_counter,
)
from atc_wrap.standin._subgraph_order import consumers_in_order, optimizer_passes_in_order
from atc_wrap.standin.converter_names import recording_type_named_nodes, store_type_named
from atc_wrap.standin.emulation import Emulation, emulate_precision, tf_origin
from atc_wrap.standin.functional_loops import loops_kept_functional, nested_loops
from atc_wrap.standin.merged_twins import merging_twins_by_name, store_merged
from binio.atomic import write_bytes_atomic
from binio.errors import first_line
from binio.graph_types import GraphDef
from binio.spec import TensorSpec, format_shape
from binio.steps import OnStep, no_steps

log = logging.getLogger(__name__)
_ROLLBACK_VARIABLE = "TF2ONNX_CATCH_ERRORS"  # tf2onnx.constants.ENV_TF2ONNX_CATCH_ERRORS, read at each conversion


@dataclass(frozen=True)
class OnnxConversion:
    """What the stand-in conversion wrote: the model, its own input/output specs and the settings used."""

    path: Path
    opset: int
    inputs: tuple[TensorSpec, ...]  # named by their TF tensor names, dtyped as the ONNX model takes them
    outputs: tuple[TensorSpec, ...]
    precision_mode: PrecisionMode
    emulation: Emulation
    tool_versions: dict[str, str] = field(default_factory=dict)
    plan: PrecisionPlan | None = None

    def settings(self) -> dict[str, Any]:
        return {"converter": "tf2onnx", "opset": self.opset, **self.tool_versions,
                "tensor_names": {s.name: s.name for s in (*self.inputs, *self.outputs)},
                "emulation": self.emulation.to_json()}


def convert_to_onnx(plan: ConversionPlan, *, on_step: OnStep = no_steps) -> OnnxConversion:
    """Converts the plan's pb (its `graph_def`, as read once) to ONNX at `plan.artefact` (written atomically),
    emulating the plan: each op in the dtype its precision plan gives it (`atc_wrap.precision.plan`), the inputs of
    `fp16_inputs` taken and the outputs `output_types` makes FP16 given as float16, the per-op controls recorded,
    AIPP's stage (`atc_wrap.aipp.onnx_stage`) in front of its input, which then takes uint8 images. Everything was
    checked making the plan. `on_step` hears each step as it starts."""
    assert plan.precision is not None and plan.opset is not None, "the stand-in's plan has a table and an opset"
    graph_def, pb, inputs, outputs = plan.graph_def, plan.pb, plan.inputs, plan.outputs
    on_step("converting with tf2onnx")
    model = _tf2onnx(graph_def, pb, inputs, outputs, plan.opset)
    _refuse_unconverted(model, pb, plan.opset)
    fp16_inputs, fp16_outputs = plan.fp16_input_tensors(), plan.fp16_output_tensors()
    _check_names(model, pb, inputs, outputs)
    on_step(f"emulating {plan.precision_mode}")
    emulation = emulate_precision(model, plan.precision_mode, fp16_inputs=fp16_inputs, fp16_outputs=fp16_outputs,
                                  op_precision=plan.precision.op_precision(), tf_nodes={n.name for n in graph_def.node},
                                  controls=controls_record(plan.controls, plan.notes), graph_def=graph_def)
    converted_inputs = tuple(s.with_dtype("float16") if s.name in fp16_inputs else s for s in inputs)
    if plan.aipp is not None:
        converted_inputs = _insert_aipp(model, converted_inputs, plan.aipp)
    on_step("checking the ONNX model and loading it in ONNX Runtime")
    _check(model, pb)
    serialized = model.SerializeToString(deterministic=True)  # same model, same bytes (and sha256)
    _check_loads(serialized, pb)
    write_bytes_atomic(plan.artefact, serialized)
    import onnx
    import onnxruntime
    import tf2onnx

    return OnnxConversion(
        path=plan.artefact, opset=plan.opset,
        inputs=converted_inputs,
        outputs=tuple(s.with_dtype("float16") if s.name in fp16_outputs else s for s in outputs),
        precision_mode=plan.precision_mode, emulation=emulation, plan=plan.precision,
        tool_versions={"tf2onnx": tf2onnx.__version__, "onnx": onnx.__version__,
                       "onnxruntime": onnxruntime.__version__},
    )


def check_aipp_batch(inputs: Sequence[TensorSpec], aipp: AippConfig) -> None:
    """Refuses AIPP on an input of unknown batch: the stand-in's AIPP stage is built for one batch size."""
    spec = inputs[aipp.related_input_rank]
    if spec.shape and spec.shape[0] is None:
        raise ConvertError(f"input {spec.name}: AIPP on the stand-in needs a static batch, found "
                           f"{format_shape(spec.shape)}", hint="infer freeze --batch N")


def _insert_aipp(model: Any, inputs: tuple[TensorSpec, ...], aipp: AippConfig) -> tuple[TensorSpec, ...]:
    spec = inputs[aipp.related_input_rank]
    insert_aipp_stage(model, spec.name, aipp, spec.layout, int(spec.shape[0] or 1))
    return tuple(aipp_input_spec(s, aipp) if i == aipp.related_input_rank else s for i, s in enumerate(inputs))


def check_output_types(output_types: Mapping[str, OutputType]) -> None:
    """Refuses the ATC output types the stand-in cannot give (UINT8: ATC's quantised output)."""
    unsupported = {f"{name}:{kind}" for name, kind in output_types.items() if kind not in ("FP32", "FP16")}
    if unsupported:
        raise ConvertError(f"--output-type {', '.join(sorted(unsupported))}: the ONNX stand-in emulates FP32 and "
                           "FP16 outputs only", hint="--target om passes it to ATC")


# One conversion at a time: the numbers tf2onnx draws for its names during one are known (`generated_names`).
_NAMING = threading.Lock()


@contextlib.contextmanager
def _optimizer_rollback(wanted: bool) -> Iterator[None]:
    """Whether tf2onnx copies the graph before each of its optimizer passes, to roll back one that raises.

    The copy is a deep copy of the whole graph, weights included, for every pass (two dozen on a small MLP): on
    192 MiB of weights, 35 s and 2 GiB of the conversion's 90 s and 10 GiB. tf2onnx turns the rollback off when
    its environment variable is set, to any value (1.17 compares the variable's name, not its value, with
    "TRUE"), and reads it at each conversion; the user's own setting is put back afterwards."""
    users = os.environ.pop(_ROLLBACK_VARIABLE, None)
    if not wanted:
        os.environ[_ROLLBACK_VARIABLE] = "FALSE"
    try:
        yield
    finally:
        os.environ.pop(_ROLLBACK_VARIABLE, None)
        if users is not None:
            os.environ[_ROLLBACK_VARIABLE] = users


def _raised_by_an_optimizer(exc: BaseException) -> bool:
    return any(frame.f_globals.get("__name__", "").startswith("tf2onnx.optimizer")
               for frame, _ in traceback.walk_tb(exc.__traceback__))


def _tf2onnx(graph_def: GraphDef, pb: Path, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             opset: int) -> Any:
    """tf2onnx's model of `graph_def`. Its optimizer passes run in place; should one raise, the graph is converted
    again with tf2onnx's rollback, which skips the failing pass as tf2onnx does by default."""
    try:
        model, drawn, type_named, merged = _tf2onnx_once(graph_def, pb, inputs, outputs, opset, rollback=False)
    except Exception as exc:
        if nested := nested_loops(graph_def):
            raise ConvertError(f"{pb}: tf2onnx cannot convert a loop nested in another loop's body: "
                               f"{', '.join(nested)}",
                               hint="unroll the inner loop (a fixed loop: a Python loop, tf.compat.v1.nn.static_rnn)"
                               ) from None
        if not _raised_by_an_optimizer(exc):
            _conversion_failed(exc, pb)
        log.info("a tf2onnx optimizer pass failed (%s): converting again with its rollback", first_line(exc, ""))
        try:
            model, drawn, type_named, merged = _tf2onnx_once(graph_def, pb, inputs, outputs, opset, rollback=True)
        except Exception as again:
            _conversion_failed(again, pb)
    tf_nodes = {node.name for node in graph_def.node}
    renamed = renumber_generated_names(model, tf_nodes, drawn)
    shared = name_shared_initializers(model, tf_nodes)
    canonical_order(model)

    def final(name: str) -> str:
        return shared.get(renamed.get(name, name), renamed.get(name, name))

    store_type_named(model, {final(name) for name in type_named})
    store_merged(model, merged, final, lambda name: tf_origin(name, tf_nodes, type_named))
    return model


def _tf2onnx_once(graph_def: GraphDef, pb: Path, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                  opset: int, *, rollback: bool) -> tuple[Any, range, set[str], dict[str, str]]:
    """One conversion: the model, the name numbers tf2onnx drew, the nodes it named after their type, the
    duplicate nodes it merged (each removed one's name -> its survivor's, `merged_twins`)."""
    import tf2onnx

    # The one tf2onnx module that draws a name from the counter when it is imported (INVALID_INPUT_ID, tf2onnx
    # 1.17): imported lazily by the first conversion of a loop, after the restart below, it shifted every later name
    # of that conversion by one against the next conversion of the same pb in the process. Imported first, it draws
    # before the restart.
    import tf2onnx.rewriter.loop_rewriter_base

    # loops_kept_functional: tf2onnx's TF1 loop rewriter loses TensorLists' types
    with (_NAMING, recording_type_named_nodes() as type_named, merging_twins_by_name() as merged,
          optimizer_passes_in_order(), consumers_in_order(), _optimizer_rollback(rollback),
          loops_kept_functional(graph_def)):
        restart_counter()
        before = counter()
        model, _ = tf2onnx.convert.from_graph_def(
            graph_def, name=pb.stem, input_names=[s.name for s in inputs],
            output_names=[s.name for s in outputs], opset=opset,
        )
        return model, range(before + 1, counter() + 1), set(type_named), dict(merged)


def _conversion_failed(exc: Exception, pb: Path) -> NoReturn:
    import tf2onnx

    if isinstance(exc, ValueError):  # tf2onnx reports graph problems (bad names, cycles) as ValueError
        raise ConvertError(f"{pb}: tf2onnx could not convert the graph ({exc})") from None
    # its handlers also fail with KeyError, AssertionError...: name it, no traceback
    first = first_line(exc, "")
    raise ConvertError(f"{pb}: tf2onnx {tf2onnx.__version__} failed on this graph ({type(exc).__name__}"
                       f"{': ' + first if first else ''})",
                       hint="-vv shows tf2onnx's log; --target om gives the pb to ATC instead") from None


def _refuse_unconverted(model: Any, pb: Path, opset: int) -> None:
    """tf2onnx leaves ops it cannot convert in the graph under their TF names: list them all in one error."""
    import onnx

    unknown: dict[str, list[str]] = {}
    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type, opset, node.domain):
            unknown.setdefault(node.op_type, []).append(node.name)
    if unknown:
        listed = "; ".join(f"{op} ({', '.join(names)})" for op, names in sorted(unknown.items()))
        raise ConvertError(f"{pb}: tf2onnx cannot convert these ops to ONNX opset {opset}: {listed}",
                           hint="the ONNX stand-in cannot run this graph; ATC may still convert it to om")


def _check_names(model: Any, pb: Path, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec]) -> None:
    """The ONNX model's inputs and outputs carry the TF tensor names, in the contract's order, or runners mismatch."""
    initializers = {t.name for t in model.graph.initializer}
    got_inputs = [i.name for i in model.graph.input if i.name not in initializers]
    got_outputs = [o.name for o in model.graph.output]
    if got_inputs != [s.name for s in inputs] or got_outputs != [s.name for s in outputs]:
        raise ConvertError(f"{pb}: tf2onnx named the model's inputs {got_inputs} and outputs {got_outputs}, "
                           f"not {[s.name for s in inputs]} and {[s.name for s in outputs]}")


def _check_loads(serialized: bytes, pb: Path) -> None:
    """ONNX Runtime must accept the model: an op it lacks at this opset shows here, not at the first run."""
    import onnxruntime
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

    refusals = (ort_errors.Fail, ort_errors.InvalidGraph, ort_errors.NotImplemented, ort_errors.InvalidArgument)
    try:
        onnxruntime.InferenceSession(serialized, providers=["CPUExecutionProvider"])
    except refusals as exc:
        first = first_line(exc, type(exc).__name__)
        raise ConvertError(f"{pb}: onnxruntime {onnxruntime.__version__} cannot load the converted model "
                           f"({first})", hint="try a lower --opset") from None


def _check(model: Any, pb: Path) -> None:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        first = first_line(exc, type(exc).__name__)
        raise ConvertError(f"{pb}: the converted ONNX model fails onnx.checker ({first})") from None



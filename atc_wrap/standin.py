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

from atc_wrap.aipp import AippConfig, aipp_input_spec
from atc_wrap.aipp_onnx import insert_aipp_stage
from atc_wrap.converter_names import recording_type_named_nodes, store_type_named
from atc_wrap.emulation import Emulation, emulate_precision
from atc_wrap.errors import ConvertError
from atc_wrap.generated_names import canonical_order, counter, name_shared_initializers, renumber_generated_names
from atc_wrap.nodes import check_nodes_exist
from atc_wrap.op_controls import OpControls, check_op_controls, controls_record
from atc_wrap.op_tables import load_op_table, op_table_for
from atc_wrap.opset import check_opset
from atc_wrap.precision import DEFAULT_PRECISION_MODE, check_precision_mode
from atc_wrap.precision_plan import PrecisionPlan, ascend_names, plan_precision, refuse_planned
from atc_wrap.soc import ASSUMED_SOC_VERSION
from binio.atomic import write_bytes_atomic
from binio.errors import first_line
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
    precision_mode: str
    emulation: Emulation
    tool_versions: dict[str, str] = field(default_factory=dict)
    plan: PrecisionPlan | None = None

    def settings(self) -> dict[str, Any]:
        return {"converter": "tf2onnx", "opset": self.opset, **self.tool_versions,
                "tensor_names": {s.name: s.name for s in (*self.inputs, *self.outputs)},
                "emulation": self.emulation.to_json()}


def convert_to_onnx(
    pb: Path,
    graph_def: Any,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    destination: Path,
    *,
    opset: int | None = None,
    precision_mode: str = DEFAULT_PRECISION_MODE,
    input_fp16_nodes: Sequence[str] = (),
    output_types: Mapping[str, str] | None = None,
    op_controls: OpControls | None = None,
    aipp: AippConfig | None = None,
    plan: PrecisionPlan | None = None,
    on_step: OnStep = no_steps,
) -> OnnxConversion:
    """Converts `pb` (its `graph_def`, as the caller read it) to ONNX at `destination` (written atomically),
    emulating ATC's `precision_mode`.

    `input_fp16_nodes` are input node names the model takes as float16; `output_types` maps output tensor names
    to ATC output types (FP32/FP16), as parsed by `atc_wrap.precision`; `op_controls` the per-op precision files
    (`atc_wrap.op_controls`), checked against the pb and emulated. `aipp` (checked against its input by
    `atc_wrap.aipp.check_against_input`) puts AIPP's stage in front of input `aipp.related_input_rank`, which then
    takes uint8 images (`atc_wrap.aipp_onnx`). `plan` is the precision plan the emulation follows op by op
    (`atc_wrap.precision_plan`, made with the same mode and controls); without one, the plan of the assumed chip
    (`atc_wrap.soc.ASSUMED_SOC_VERSION`), refused where ATC would refuse it. `on_step` hears each step as it
    starts.
    """
    check_precision_mode(precision_mode)
    check_output_types(output_types or {})
    chosen_opset = check_opset(opset)
    check_nodes_exist(graph_def, pb, inputs, outputs)
    controls = op_controls or OpControls()
    table = load_op_table(plan.family) if plan is not None else op_table_for(ASSUMED_SOC_VERSION)
    check_op_controls(controls, graph_def, pb, precision_mode, emulated=True,
                      ascend_types=ascend_names(graph_def, table))
    if plan is None:
        fp16_nodes = {spec.node for spec in inputs if spec.node in set(input_fp16_nodes)}
        plan = refuse_planned(plan_precision(graph_def, table, precision_mode, chip=ASSUMED_SOC_VERSION,
                                             chip_assumed=True, controls=controls, fp16_inputs=fp16_nodes),
                              allow_unsupported=False)
    elif plan.precision_mode != precision_mode:
        raise ConvertError(f"{pb}: the precision plan is for {plan.precision_mode}, the conversion for "
                           f"{precision_mode}")
    op_precision = plan.op_precision()
    on_step("converting with tf2onnx")
    model = _tf2onnx(graph_def, pb, inputs, outputs, chosen_opset)
    _refuse_unconverted(model, pb, chosen_opset)
    fp16_inputs = {spec.name for spec in inputs if spec.node in set(input_fp16_nodes)}
    fp16_outputs = {name for name, kind in (output_types or {}).items() if kind == "FP16"}
    _check_names(model, pb, inputs, outputs)
    on_step(f"emulating {precision_mode}")
    emulation = emulate_precision(model, precision_mode, fp16_inputs=fp16_inputs, fp16_outputs=fp16_outputs,
                                  op_precision=op_precision, tf_nodes={n.name for n in graph_def.node},
                                  controls=controls_record(controls, precision_mode), graph_def=graph_def)
    converted_inputs = tuple(s.with_dtype("float16") if s.name in fp16_inputs else s for s in inputs)
    if aipp is not None:
        converted_inputs = _insert_aipp(model, converted_inputs, aipp)
    on_step("checking the ONNX model and loading it in ONNX Runtime")
    _check(model, pb)
    serialized = model.SerializeToString(deterministic=True)  # same model, same bytes (and sha256)
    _check_loads(serialized, pb)
    write_bytes_atomic(destination, serialized)
    import onnx
    import onnxruntime
    import tf2onnx

    return OnnxConversion(
        path=destination, opset=chosen_opset,
        inputs=converted_inputs,
        outputs=tuple(s.with_dtype("float16") if s.name in fp16_outputs else s for s in outputs),
        precision_mode=precision_mode, emulation=emulation, plan=plan,
        tool_versions={"tf2onnx": tf2onnx.__version__, "onnx": onnx.__version__,
                       "onnxruntime": onnxruntime.__version__},
    )


def _insert_aipp(model: Any, inputs: tuple[TensorSpec, ...], aipp: AippConfig) -> tuple[TensorSpec, ...]:
    spec = inputs[aipp.related_input_rank]
    if spec.shape and spec.shape[0] is None:
        raise ConvertError(f"input {spec.name}: AIPP on the stand-in needs a static batch, found "
                           f"{format_shape(spec.shape)}", hint="infer freeze --batch N")
    insert_aipp_stage(model, spec.name, aipp, spec.layout, int(spec.shape[0] or 1))
    return tuple(aipp_input_spec(s, aipp) if i == aipp.related_input_rank else s for i, s in enumerate(inputs))


def check_output_types(output_types: Mapping[str, str]) -> None:
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


def _tf2onnx(graph_def: Any, pb: Path, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
             opset: int) -> Any:
    """tf2onnx's model of `graph_def`. Its optimizer passes run in place; should one raise, the graph is converted
    again with tf2onnx's rollback, which skips the failing pass as tf2onnx does by default."""
    try:
        model, drawn, type_named = _tf2onnx_once(graph_def, pb, inputs, outputs, opset, rollback=False)
    except Exception as exc:
        if not _raised_by_an_optimizer(exc):
            _conversion_failed(exc, pb)
        log.info("a tf2onnx optimizer pass failed (%s): converting again with its rollback", first_line(exc, ""))
        try:
            model, drawn, type_named = _tf2onnx_once(graph_def, pb, inputs, outputs, opset, rollback=True)
        except Exception as again:
            _conversion_failed(again, pb)
    tf_nodes = {node.name for node in graph_def.node}
    renamed = renumber_generated_names(model, tf_nodes, drawn)
    shared = name_shared_initializers(model, tf_nodes)
    canonical_order(model)
    store_type_named(model, {shared.get(renamed.get(name, name), renamed.get(name, name)) for name in type_named})
    return model


def _tf2onnx_once(graph_def: Any, pb: Path, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                  opset: int, *, rollback: bool) -> tuple[Any, range, set[str]]:
    """One conversion: the model, the name numbers tf2onnx drew, the nodes it named after their type."""
    import tf2onnx

    with _NAMING, recording_type_named_nodes() as type_named, _optimizer_rollback(rollback):
        before = counter()
        model, _ = tf2onnx.convert.from_graph_def(
            graph_def, name=pb.stem, input_names=[s.name for s in inputs],
            output_names=[s.name for s in outputs], opset=opset,
        )
        return model, range(before + 1, counter() + 1), set(type_named)


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



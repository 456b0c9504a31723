"""Emulating ATC's precision modes on an fp32 ONNX graph; docs/fp16-emulation.md has the measurement behind it.

Converting the model to float16 is not faithful: ONNX Runtime's CPU provider lacks fp16 kernels for most ops and
silently computes whole chains in fp32, so overflows the NPU would hit vanish. Instead the graph stays fp32 and
every float tensor an fp16 op makes is rounded to fp16 right after that op (Cast to float16, Cast back to
float32): fp16 storage with fp32 arithmetic inside each op, as the NPU's cube unit computes (fp16 in, fp32
accumulate, fp16 out). Values past 65504 become inf, and what follows them inf or NaN, as on the device.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any, cast

from atc_wrap.precision.modes import PrecisionMode
from atc_wrap.precision.op_controls import OpPrecision
from atc_wrap.precision.op_types import ONNX_OPS_OF_TF
from atc_wrap.precision.plan import LEGACY, USER_CONTROLS, Storage, storage_for
from atc_wrap.standin._fused_ops import fused_first_ops
from atc_wrap.standin._inserted_ops import inserted_ops
from atc_wrap.standin.converter_names import read_type_named
from atc_wrap.standin.merged_twins import read_merged
from atc_wrap.standin.subgraphs import outer_reads, rename_outer_reads, subgraphs
from binio.dtypes import dtype
from binio.graph_types import GraphDef

log = logging.getLogger(__name__)

# The rule before the operator tables, kept for the ops a plan cannot place (`atc_wrap.precision.plan.LEGACY`) and
# for a graph emulated without a plan. allow_mix_precision: op types kept in fp32 because fp16 loses too much in them.
FP32_OP_TYPES: tuple[str, ...] = (
    "ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
    "ReduceProd", "Softmax", "LogSoftmax", "Exp", "Log", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization", "LpNormalization", "MeanVarianceNormalization",
)
# allow_mix_precision: op types that always compute in fp16 (the cube unit's), their inputs rounded first.
FP16_OP_TYPES: tuple[str, ...] = ("Conv", "ConvTranspose", "MatMul", "Gemm")
# Single-float-input ops that commute with the rounding: round(op(x)) == round(op(round(x))) for every fp32 x,
# because they move values, or select them by a comparison (fp16 rounding is monotone), or flip their sign (it is
# symmetric); the same numbers, but for the sign of a zero (Relu of a rounded -1e-10 is -0.0, a rounded Relu of
# it +0.0). A rounding due on their only input is made after them instead (_COMMUTE_WITH_ROUNDING), so ONNX
# Runtime can fuse Conv+Relu and the Cast pair after a MaxPool reads the pooled tensor.
_ONE_INPUT_MOVES = frozenset({
    "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "DepthToSpace", "SpaceToDepth",
    "Slice", "Gather", "Expand", "Tile", "Relu", "ReduceMax", "ReduceMin", "Neg", "Abs",
})
# Ops whose float outputs are fp16 values whenever their inputs are: they move or select values of their inputs,
# or (the last four) compute values fp16 holds exactly. No rounding after them.
_VALUE_PRESERVING = _ONE_INPUT_MOVES | {
    "Concat", "Split", "GatherElements", "GatherND", "Max", "Min", "Pad", "Where", "Dropout",
    # Not moves, but their results from fp16 values are fp16 values too (integers, or -1/0/1): a rounding after
    # them would change nothing and cost two passes over the tensor.
    "Floor", "Ceil", "Round", "Sign",
}
# The layout helpers tf2onnx puts around an op (named after it): they follow what they read, whatever the op's rule.
_LAYOUT_MOVES = frozenset({"Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze", "Flatten"})
_LOOK_THROUGH = 4  # layout helpers in a row that a reader is looked for through
# MaxPool and GlobalMaxPool commute with the rounding but are not value-preserving: ONNX Runtime starts a window at
# the lowest float32, so a window of -inf (or of padding alone) gives -3.4e38, which fp16 cannot hold; rounded after
# them, that becomes -inf as it should. Not Floor/Ceil/Round/Sign (2.9999999 floors to 2 but rounds to 3.0 first),
# nor Pad (its constant need not be an fp16 value).
_COMMUTE_WITH_ROUNDING = _ONE_INPUT_MOVES | {"MaxPool", "GlobalMaxPool"}
# The model's metadata key listing the tensors whose rounding was made after the op that reads them: what they
# hold is the unrounded value, and `emulated_value` gives what the emulation means by them.
ROUNDED_LATER_KEY = "infer.fp16_rounded_later"
_NOT_EMULATED = (
    "ATC's fusion passes (conv+bn+relu and others change where roundings happen)",
    "the hardware's accumulation order and its fp32 accumulation width inside an op",
    "the tables' chip facts past their 2022 snapshot (a newer CANN may have kernels and dtypes they lack)",
    "the op-specific implementations chosen by --op_select_implmode",
    "tensors inside control-flow subgraphs (If/Loop bodies)",
)
_FLOAT, _FLOAT16 = dtype("float32").onnx, dtype("float16").onnx  # onnx.TensorProto.FLOAT, FLOAT16


@dataclass(frozen=True)
class Emulation:
    """What the stand-in did to emulate a precision mode, recorded in the contract."""

    mode: PrecisionMode
    storage: Storage  # whether the ops compute in fp16, fp32 or some of each
    rounded_tensors: int = 0  # op outputs and inputs rounded to fp16 by a Cast pair
    rounded_later: int = 0  # op outputs whose rounding is made after the op reading them (_COMMUTE_WITH_ROUNDING)
    rounded_weights: int = 0  # float initializers whose values were rounded to fp16
    fp16_inputs: tuple[str, ...] = ()  # inputs the model takes as float16 (--input-fp16-nodes)
    fp16_outputs: tuple[str, ...] = ()  # outputs it gives as float16 (--output-type)
    untyped_tensors: int = 0  # float-or-not unknown after shape inference: left unrounded
    per_op: tuple[OpRecord, ...] = ()  # the per-op controls (--keep-dtype, ...) as applied, per TF node
    controls: Mapping[str, Any] = field(default_factory=dict)  # the control files as read, for the record
    planned: bool = False  # each op as the precision plan says (converted.precision_plan), not by the mode alone
    fallback_ops: tuple[str, ...] = ()  # TF nodes the plan could not place: emulated by the mode alone

    @property
    def emulated(self) -> tuple[str, ...]:
        if self.storage == "fp32":
            return ("fp32 arithmetic and storage throughout, as ATC keeps it",)
        done = ["fp16 storage: every float tensor an fp16 op makes is rounded to fp16 (Cast pair), overflow "
                "past 65504 gives inf", "fp32 arithmetic inside each op (fp16 in, fp32 accumulate, fp16 out)",
                "float weights rounded to fp16 where only fp16 ops read them"]
        if self.planned:
            done.append("each op in the dtype the precision plan gives it (converted.precision_plan: the chip's "
                        "operator table, the mode's rule, the per-op controls): fp32 ops neither rounded nor "
                        "reading rounded weights; an fp16 op's fp32 inputs cast to fp16 at the boundary, as ATC "
                        "inserts Casts; fp16 in, fp32 out: its inputs cast, its output not rounded; an AI CPU op in "
                        "its own dtype; nodes the converter inserted, and TF ops that move values, as their "
                        "inputs; a node the converter named itself (a Gemm of MatMul + Add) as the TF ops it "
                        "computes; a weight as its real reader computes")
        if self.fallback_ops:
            done.append(f"{len(self.fallback_ops)} ops the operator table does not place "
                        f"({', '.join(self.fallback_ops[:5])}{', ...' if len(self.fallback_ops) > 5 else ''}) "
                        f"as before the tables: {_legacy_rule(self.mode)}")
        elif not self.planned and self.storage == "mixed":
            done.append(_legacy_rule(self.mode))
        if self.rounded_later:
            done.append("a rounding due on the only input of an op that commutes with it (moves, Relu, MaxPool, Neg, "
                        "Abs) is made after that op instead: the same numbers, fewer passes (ONNX Runtime can fuse "
                        "Conv+Relu); such a tensor holds its unrounded value, which layerwise compare rounds as it "
                        "reads it")
        if self.per_op:
            done.append("per-op controls: every ONNX node of a named TF node computes and stores as the control "
                        "says (fp32: no rounding, its weights kept fp32; fp16: its fp32 inputs cast to fp16 at "
                        "the boundary, as ATC inserts Casts, and its outputs rounded)")
        return tuple(done)

    def to_json(self) -> dict[str, Any]:
        legacy_mixed = storage_for(self.mode) == "mixed" and (self.fallback_ops or not self.planned)
        return {
            "mode": self.mode, "storage": self.storage, "planned": self.planned,
            "rounded_tensors": self.rounded_tensors, "rounded_later": self.rounded_later,
            "rounded_weights": self.rounded_weights, "fp16_inputs": list(self.fp16_inputs),
            "fp16_outputs": list(self.fp16_outputs), "untyped_tensors": self.untyped_tensors,
            "fallback_ops": list(self.fallback_ops),
            "fp32_op_types": list(FP32_OP_TYPES) if legacy_mixed else [],
            "emulated": list(self.emulated), "not_emulated": list(_NOT_EMULATED),
            "op_controls": dict(self.controls), "per_op": [r.to_json() for r in self.per_op],
        }


def _legacy_rule(mode: PrecisionMode) -> str:
    storage = storage_for(mode)
    if storage == "mixed":
        return (f"{', '.join(FP32_OP_TYPES)} kept in fp32; ops fed only by fp32 tensors stay fp32; "
                f"{', '.join(FP16_OP_TYPES)} always fp16")
    return f"every float tensor {'rounded to fp16' if storage == 'fp16' else 'kept in fp32'} under {mode}"


@dataclass(frozen=True)
class OpRecord:
    """One TF node a control named, and the ONNX nodes of the stand-in it was applied to."""

    node: str
    op_type: str
    compute: str
    source: str
    onnx_nodes: tuple[str, ...]
    input_dtypes: tuple[str, ...] = ()
    output_dtypes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"node": self.node, "op_type": self.op_type, "compute": self.compute,
                                 "source": self.source, "onnx_nodes": list(self.onnx_nodes)}
        if self.input_dtypes or self.output_dtypes:
            found.update(input_dtypes=list(self.input_dtypes), output_dtypes=list(self.output_dtypes))
        if not self.onnx_nodes:
            found["note"] = "no ONNX node of its own (fused into its neighbour by the converter): nothing to apply"
        return found


def tf_origin(onnx_node: str, tf_nodes: Set[str], type_named: Set[str] = frozenset()) -> str | None:
    """The TF node an ONNX node of tf2onnx's comes from: the node of the same name, or ``<tf name>__<n>``, the
    helpers tf2onnx names after the node it converts; None for nodes its optimisers insert, and for those it named
    after their op type (`type_named`, from `atc_wrap.standin.converter_names`) even where a TF node bears that name."""
    if onnx_node in type_named:
        return None
    name = onnx_node
    while True:
        if name in tf_nodes:
            return name
        head, sep, _ = name.rpartition("__")
        if not sep or not head:
            return None
        name = head


def emulate_precision(model: Any, mode: PrecisionMode, *, fp16_inputs: Set[str], fp16_outputs: Set[str],
                      op_precision: Mapping[str, OpPrecision] | None = None, tf_nodes: Set[str] = frozenset(),
                      controls: Mapping[str, Any] | None = None, graph_def: GraphDef = None) -> Emulation:
    """Rewrites the fp32 ONNX `model` in place to compute as ATC would under `mode`; returns what it did.

    `fp16_inputs` / `fp16_outputs` are graph input / output names the model takes / gives as float16.
    `op_precision` (TF node name -> how it computes: the precision plan's, `PrecisionPlan.op_precision`) decides
    for the ONNX nodes of those TF nodes, the mode alone for the others (and for the plan's LEGACY ones); `tf_nodes`
    are the pb's node names, to find each ONNX node's TF node; `graph_def`, the pb itself, to find the nodes that
    compute two TF ops (`atc_wrap.standin._fused_ops`).
    """
    rewriter = _Rewriter(model, storage_for(mode), op_precision or {}, tf_nodes, graph_def)
    rewriter.inputs(fp16_inputs)
    rewriter.weights()
    rewriter.nodes()
    rewriter.outputs(fp16_outputs)
    rewriter.finish()
    planned = any(rule.source not in USER_CONTROLS for rule in (op_precision or {}).values())
    return Emulation(mode=mode, storage=rewriter.computed(), rounded_tensors=rewriter.rounded,
                     rounded_later=len(rewriter.later),
                     rounded_weights=rewriter.rounded_weights, fp16_inputs=tuple(sorted(fp16_inputs)),
                     fp16_outputs=tuple(sorted(fp16_outputs)), untyped_tensors=len(rewriter.untyped),
                     per_op=rewriter.records(), controls=controls or {}, planned=planned,
                     fallback_ops=tuple(name for name, rule in (op_precision or {}).items() if rule.compute == LEGACY))


class _Rewriter:
    """One pass over the graph in its (topological) order, tracking whether each float tensor is fp16 or fp32."""

    def __init__(self, model: Any, storage: Storage, op_precision: Mapping[str, OpPrecision],
                 tf_nodes: Set[str], graph_def: GraphDef = None) -> None:
        import onnx

        self.model = model
        self.graph = model.graph
        self.storage = storage
        self.op_precision = op_precision
        # ONNX node name -> the control for its TF node; the TF node of every ONNX node, for the record

        type_named = read_type_named(model)
        self.origin = ({n.name: tf_origin(n.name, tf_nodes, type_named) for n in self.graph.node} if op_precision
                       else {})
        if graph_def is not None and op_precision:
            _claim_type_named_compute(self.graph, self.origin, {node.name: node.op for node in graph_def.node})
        self.rules: dict[str, OpPrecision] = {name: op_precision[tf] for name, tf in self.origin.items()
                                              if tf is not None and tf in op_precision}
        self.stands_for: dict[str, tuple[str, ...]] = {}  # ONNX node -> TF nodes it computes besides its origin
        if graph_def is not None and self.rules:
            tf_types = {node.name: node.op for node in graph_def.node}
            for node in self.graph.node:
                tf = self.origin.get(node.name)
                if node.op_type in _LAYOUT_MOVES and tf is not None and _has_compute(tf_types.get(tf, "")):
                    # A transpose or reshape tf2onnx made around the op (NHWC <-> NCHW): it moves values, so it
                    # follows what it reads, and the op's own rule applies where the op reads and writes.
                    self.rules.pop(node.name, None)
            for name, first in fused_first_ops(model, graph_def, self.origin).items():
                if first in op_precision and name in self.rules:
                    self.rules[name] = _fused(op_precision[first], self.rules[name])
                    self.stands_for[name] = (first,)
            for name, computed in inserted_ops(model, graph_def, self.origin).items():
                # A Gemm tf2onnx fused from a MatMul and an Add, a depthwise Conv with its bias: named by tf2onnx,
                # it computes as the TF ops it stands for (and so reads its weights as they do).
                planned = [op_precision[tf] for tf in computed if tf in op_precision]
                if planned:
                    self.rules[name] = _fused(planned[0], planned[-1])
                    self.stands_for[name] = computed
        if self.rules:
            self._merge_twins(read_merged(model), op_precision)
        self.types = _elem_types(onnx.shape_inference.infer_shapes(model))
        self.state: dict[str, str] = {}  # float tensor -> fp16 | fp32
        self.rename: dict[str, str] = {}  # tensor name -> the name its consumers read instead
        self.prefix: list[Any] = []  # nodes inserted before the graph's own
        self.rounded = 0
        self.rounded_weights = 0
        self.untyped: set[str] = set()
        self.later: set[str] = set()  # fp16 tensors still unrounded: the op reading them rounds its output
        self._sole_readers = _sole_readers(self.graph)
        self.changed: set[str] = set()  # names whose value_info is no longer right
        self._rounded_cache: dict[str, str] = {}
        self._names: set[str] = {n.name for n in self.graph.node}
        self.initializers = {t.name for t in self.graph.initializer}
        self._readers: dict[str, list[tuple[Any, int | None]]] | None = None
        self._graph_outputs = {o.name for o in self.graph.output}
        self._inside_op: dict[str, set[str]] = {}  # TF node -> tensors between its own ONNX nodes
        self.decided: set[str] = set()  # fp16 / fp32: the dtypes float nodes computed in

    def _merge_twins(self, merged: Mapping[str, tuple[str, ...]], op_precision: Mapping[str, OpPrecision]) -> None:
        """A node tf2onnx kept of several equal ones computes every twin: a per-op control naming any of them
        applies to it (the first twin by name whose control there is, where its own TF node has none)."""
        for survivor, twins in merged.items():
            own = self.rules.get(survivor)
            if own is None and self.origin.get(survivor) is not None:
                continue  # a transpose around the op, which follows what it reads
            controlled = [op_precision[tf] for tf in twins if tf in op_precision
                          and op_precision[tf].source in USER_CONTROLS]
            if controlled and (own is None or own.source not in USER_CONTROLS):
                self.rules[survivor] = controlled[0]
            self.stands_for[survivor] = (*self.stands_for.get(survivor, ()), *twins)

    def _unique(self, base: str) -> str:
        name, count = base, 1
        while name in self._names:
            count += 1
            name = f"{base}_{count}"
        self._names.add(name)
        return name

    def _round_pair(self, source: str, target: str) -> list[Any]:
        from onnx import helper

        half = self._unique(f"{target}/fp16")
        self.rounded += 1
        return [helper.make_node("Cast", [source], [half], name=self._unique(f"{target}/to_fp16"), to=_FLOAT16),
                helper.make_node("Cast", [half], [target], name=self._unique(f"{target}/to_fp32"), to=_FLOAT)]

    def inputs(self, fp16_inputs: Set[str]) -> None:
        from onnx import helper

        initializers = {i.name for i in self.graph.initializer}
        for graph_input in self.graph.input:
            name = graph_input.name
            if name in initializers or graph_input.type.tensor_type.elem_type != _FLOAT:
                continue
            if name in fp16_inputs:
                # The model takes float16; its fp32 arithmetic starts from an exact widening of it.
                graph_input.type.tensor_type.elem_type = _FLOAT16
                widened = self._unique(f"{name}/as_fp32")
                self.prefix.append(helper.make_node("Cast", [name], [widened], name=self._unique(f"{name}/widen"),
                                                    to=_FLOAT))
                self.rename[name] = widened
                self.state[widened] = "fp16"
                self.changed.add(name)
            elif self._read_as(name, follow="fp32") == {"fp16"}:
                # ATC feeds an fp32 input to fp16 ops through a cast at the model's entry. Where an fp32 op reads it
                # too, it stays fp32 and each fp16 reader casts it at its boundary instead.
                rounded = self._unique(f"{name}/rounded")
                self.prefix.extend(self._round_pair(name, rounded))
                self.rename[name] = rounded
                self.state[rounded] = "fp16"
            else:
                self.state[name] = "fp32"

    def _reads(self) -> dict[str, list[tuple[Any, int | None]]]:
        """Tensor -> (node, input position) for each read; position None where a node's subgraph reads it."""
        if self._readers is None:
            self._readers = {}
            for node in self.graph.node:
                for position, name in enumerate(node.input):
                    if name:
                        self._readers.setdefault(name, []).append((node, position))
                for name in outer_reads(node):
                    self._readers.setdefault(name, []).append((node, None))
        return self._readers

    def _read_as(self, name: str, *, follow: str, depth: int = 0, through_any: bool = False) -> set[str]:
        """The dtypes the nodes reading `name` read it in, as far as known before the pass: a node without a
        rule (converter-inserted, or a TF op that moves values) counts as `follow` (fp32 for a model input: it
        follows the op before it, the fp32 input; fp16 for a weight, which is no op). A layout move without a rule
        is looked through to the nodes reading what it makes; with `through_any` (a weight, which follows its real
        reader), so is any node without a rule whose outputs are floats (a Cast, a Concat the converter added)."""
        found: set[str] = set()
        for node, position in self._reads().get(name, []):
            if position is None or subgraphs(node):
                # read inside an If or Loop body, which is not emulated: as it is, fp32. A Loop's own inputs (what a
                # TF2 While carries from step to step: its captured weights too) are its body's inputs, read there.
                found.add("fp32")
                continue
            rule = self.rules.get(node.name)
            if rule is None and self.rules and depth < _LOOK_THROUGH and (
                    node.op_type in _LAYOUT_MOVES or (through_any and self._moves_floats(node))):
                # A transpose that follows what it reads: the tensor is read as the ops after it read it.
                for output in (o for o in node.output if o):
                    found |= self._read_as(output, follow=follow, depth=depth + 1, through_any=through_any) or {follow}
                continue
            if rule is None or rule.compute == LEGACY:
                found.add(follow if self.rules and rule is None else self._legacy_reads(node, follow))
            elif rule.input_dtypes:
                found.add("fp16" if _input_dtype(rule, position) == "float16" else "fp32")
            else:
                found.add({"fp16": "fp16", "fp32": "fp32"}.get(rule.compute, follow))
        return found

    def _moves_floats(self, node: Any) -> bool:
        """Whether `node` holds no subgraph and gives only float outputs (what reads them reads its inputs' values)."""
        outputs = [o for o in node.output if o]
        return bool(outputs) and not subgraphs(node) and all(self.types.get(o) == _FLOAT for o in outputs)

    def _legacy_reads(self, node: Any, follow: str) -> str:
        """How the mode alone (before the tables) reads a tensor: by the storage, and in mixed by op type."""
        if self.storage != "mixed":
            return self.storage
        if node.op_type in FP32_OP_TYPES:
            return "fp32"
        if node.op_type in FP16_OP_TYPES:
            return "fp16"
        return follow

    def weights(self) -> None:
        if self.storage == "fp32" and not self.rules:
            self.state.update({t.name: "fp32" for t in self.graph.initializer if t.data_type == _FLOAT})
            return
        import numpy as np
        from onnx import numpy_helper

        for index, tensor in enumerate(self.graph.initializer):
            if tensor.data_type != _FLOAT:
                continue
            if "fp32" in self._read_as(tensor.name, follow="fp16", through_any=True):
                # An fp32 op reads it: kept (ATC keeps the weight of an fp32 op), an fp16 reader casts it.
                self.state[tensor.name] = "fp32"
                continue
            values = numpy_helper.to_array(tensor)
            rounded = values.astype(np.float16).astype(np.float32)
            if not np.array_equal(rounded, values, equal_nan=True):
                self.graph.initializer[index].CopyFrom(numpy_helper.from_array(rounded, tensor.name))
                self.rounded_weights += 1
            self.state[tensor.name] = "fp16"

    def _computes_in_fp16(self, node: Any, float_inputs: list[str]) -> bool:
        rule = self.rules.get(node.name)
        # A gray op follows the op before it: the tensors ops made, not the weights (which are no op).
        activations = [name for name in float_inputs if name not in self.initializers] or float_inputs
        any_fp32 = any(self.state.get(name) == "fp32" for name in activations)
        if rule is not None and rule.compute != LEGACY:
            return rule.compute == "fp16" or (rule.compute == "follow" and not any_fp32)
        if rule is None and self.rules and activations:
            return not any_fp32  # converter-inserted, or a TF op that moves values: as its inputs
        # Converter-inserted with no float input (a Cast of NMS's padding count to float, a Relu on it): part of a
        # TF op on integers; it computes as the mode keeps such ops (fp32 under must_keep_origin_dtype, force_fp32).
        if self.storage == "fp32":
            return False
        if self.storage == "fp16":
            return True
        if node.op_type in FP32_OP_TYPES:
            return False
        if node.op_type in FP16_OP_TYPES:
            return True
        return not any(self.state.get(name) == "fp32" for name in float_inputs)

    def _rounded_input(self, name: str, out: list[Any]) -> str:
        if name not in self._rounded_cache:
            rounded = self._unique(f"{name}/rounded")
            out.extend(self._round_pair(name, rounded))
            self._rounded_cache[name] = rounded
            self.state[rounded] = "fp16"
        return self._rounded_cache[name]

    def nodes(self) -> None:
        if self.storage == "fp32" and not self.rename and not self.rules:
            return
        rewritten: list[Any] = list(self.prefix)
        for node in list(self.graph.node):
            for position, name in enumerate(node.input):
                if name in self.rename:
                    node.input[position] = self.rename[name]
            if self.rename:
                rename_outer_reads(node, self.rename)
            float_inputs = [n for n in node.input if n and (self.types.get(n) == _FLOAT or n in self.state)]
            # What an If's branches or a Loop's body read from here: the node follows it as it follows its inputs.
            read_inside = [n for n in outer_reads(node) if self.types.get(n) == _FLOAT or n in self.state]
            float_outputs = [n for n in node.output if n and self.types.get(n) == _FLOAT]
            self.untyped.update(n for n in node.output if n and n not in self.types)
            if self.storage == "fp32" and not self.rules:
                rewritten.append(node)
                continue
            rule = self.rules.get(node.name)
            if rule is not None and (rule.input_dtypes or rule.output_dtypes):
                self._customized(node, rule, float_inputs, float_outputs, rewritten)
                continue
            fp16 = self._computes_in_fp16(node, float_inputs + [n for n in read_inside if n not in float_inputs])
            if (float_inputs or float_outputs) and (rule is not None or not self.rules):
                self.decided.add("fp16" if fp16 else "fp32")  # the ops' own dtypes, not those of what follows
            if fp16 and (node.op_type in FP16_OP_TYPES or self.rules):
                # An fp16 op reads fp16: ATC casts an fp32 tensor (a kept op's output) at the boundary.
                for position, name in enumerate(node.input):
                    if name in float_inputs and self.state.get(name) != "fp16":
                        node.input[position] = self._rounded_input(name, rewritten)
            rewritten.append(node)
            if not fp16:
                self.state.update(dict.fromkeys(float_outputs, "fp32"))
                continue
            inputs_fp16 = all(self.state.get(name) == "fp16" and name not in self.later for name in float_inputs)
            if node.op_type in _VALUE_PRESERVING and inputs_fp16:
                self.state.update(dict.fromkeys(float_outputs, "fp16"))
                continue
            for position, name in enumerate(node.output):
                if name in float_outputs and self._rounds_later(name):
                    self.later.add(name)
                    self.state[name] = "fp16"
                elif name in float_outputs:
                    raw = self._unique(f"{name}/fp32")
                    node.output[position] = raw
                    rewritten.extend(self._round_pair(raw, name))
                    self.state[name] = "fp16"
        del self.graph.node[:]
        self.graph.node.extend(rewritten)

    def computed(self) -> Storage:
        """fp16, fp32 or mixed: the dtypes the float ops computed in."""
        if not self.decided:
            return self.storage if not self.rules else "fp32"
        return "mixed" if len(self.decided) > 1 else cast(Storage, next(iter(self.decided)))

    def _rounds_later(self, name: str) -> bool:
        """Whether `name`'s rounding can be made after the op reading it: one op reads it, once, that op commutes
        with the rounding, has one output, a float, and computes in fp16 when this is its only float input (not
        one a rule keeps in fp32 or gives dtypes per position)."""
        reader = self._sole_readers.get(name)
        if reader is None or reader.op_type not in _COMMUTE_WITH_ROUNDING:
            return False
        rule = self.rules.get(reader.name)
        if rule is not None and rule.compute != LEGACY and (rule.compute != "fp16" or rule.input_dtypes
                                                               or rule.output_dtypes):
            return False
        if rule is not None and rule.compute == LEGACY and self._legacy_reads(reader, "fp16") != "fp16":
            return False
        if rule is None and not self.rules and self._legacy_reads(reader, "fp16") != "fp16":
            return False
        outputs = [n for n in reader.output if n]
        float_inputs = [n for n in reader.input if n and self.types.get(n) == _FLOAT]
        return len(outputs) == 1 and self.types.get(outputs[0]) == _FLOAT and float_inputs == [name]

    def _customized(self, node: Any, rule: OpPrecision, float_inputs: list[str], float_outputs: list[str],
                    rewritten: list[Any]) -> None:
        """Dtypes per position (--customize-dtypes, or the plan's fp16 in, fp32 out): each input and output of the
        TF op in the dtype the rule gives for its position. Where the TF op is several ONNX nodes (a convolution
        and its transposes), a tensor between two of them is inside the op: computed in fp32, not rounded."""
        origin = self.origin.get(node.name)
        inside = self._inside(origin)
        for position, name in enumerate(node.input):
            if name in inside:
                continue
            if name in float_inputs and _input_dtype(rule, position) == "float16" and self.state.get(name) != "fp16":
                node.input[position] = self._rounded_input(name, rewritten)
        rewritten.append(node)
        self.decided.add("fp16" if _input_dtype(rule, 0) == "float16" else "fp32")
        for position, name in enumerate(node.output):
            if name not in float_outputs:
                continue
            if origin is not None and self._read_only_inside(name, origin):
                self.state[name] = "fp32"  # inside the op: fp32, unrounded
                inside.add(name)
                continue
            # An output the rule leaves out is stored as the precision mode stores it.
            dtype = _at(rule.output_dtypes, position) or ("float16" if self.storage == "fp16" else "float32")
            if dtype == "float16":
                raw = self._unique(f"{name}/fp32")
                node.output[position] = raw
                rewritten.extend(self._round_pair(raw, name))
                self.state[name] = "fp16"
            else:
                self.state[name] = "fp32"

    def _inside(self, origin: str | None) -> set[str]:
        return self._inside_op.setdefault(origin, set()) if origin is not None else set()

    def _read_only_inside(self, name: str, origin: str) -> bool:
        """Whether every reader of `name` is an ONNX node of the same TF op (and it is no graph output)."""
        readers = self._reads().get(name, [])
        return bool(readers) and name not in self._graph_outputs and all(
            self.origin.get(node.name) == origin for node, _ in readers)

    def records(self) -> tuple[OpRecord, ...]:
        by_tf: dict[str, list[str]] = {}
        for onnx_name, tf in self.origin.items():
            if tf is not None:
                by_tf.setdefault(tf, []).append(onnx_name)
        for onnx_name, computed in self.stands_for.items():
            for tf in computed:
                if onnx_name not in by_tf.setdefault(tf, []):
                    by_tf[tf].append(onnx_name)
        return tuple(OpRecord(node=rule.node, op_type=rule.op_type, compute=rule.compute, source=rule.source,
                              onnx_nodes=tuple(by_tf.get(rule.node, ())), input_dtypes=rule.input_dtypes,
                              output_dtypes=rule.output_dtypes) for rule in self.op_precision.values()
                     if rule.source in USER_CONTROLS)

    def outputs(self, fp16_outputs: Set[str]) -> None:
        from onnx import helper

        for graph_output in self.graph.output:
            name = graph_output.name
            if name not in fp16_outputs:
                continue
            wide = self._unique(f"{name}/fp32_out")
            for node in self.graph.node:
                for group in (node.input, node.output):
                    for position, tensor in enumerate(group):
                        if tensor == name:
                            group[position] = wide
                rename_outer_reads(node, {name: wide})  # the narrowing Cast comes last: bodies read the wide one
            self.graph.node.append(helper.make_node("Cast", [wide], [name], name=self._unique(f"{name}/narrow"),
                                                    to=_FLOAT16))
            graph_output.type.tensor_type.elem_type = _FLOAT16
            self.changed.add(name)

    def finish(self) -> None:
        if self.later:
            entry = self.model.metadata_props.add()
            entry.key, entry.value = ROUNDED_LATER_KEY, json.dumps(sorted(self.later))
        kept = [v for v in self.graph.value_info if v.name not in self.changed]
        del self.graph.value_info[:]
        self.graph.value_info.extend(kept)
        if self.untyped:
            log.warning("%d tensors have no type after shape inference and were left unrounded: %s",
                        len(self.untyped), ", ".join(sorted(self.untyped)[:5]))


def tensors_rounded_later(model: Any) -> frozenset[str]:
    """The tensors of an emulated model that hold their unrounded values (their rounding is made after the op that
    reads them); empty for a model converted before roundings were moved."""
    for prop in model.metadata_props:
        if prop.key == ROUNDED_LATER_KEY:
            return frozenset(json.loads(prop.value))
    return frozenset()


def emulated_value(value: Any, name: str, later: Set[str]) -> Any:
    """`value`, read from tensor `name` of an emulated model, as the emulation means it: rounded to fp16 where
    the rounding was moved past the op reading it (exactly what the Cast pair there would have stored)."""
    import numpy as np

    if name not in later:
        return value
    with np.errstate(over="ignore"):
        return np.asarray(value).astype(np.float16).astype(np.float32)


def _sole_readers(graph: Any) -> dict[str, Any]:
    """Tensor -> the one node reading it, for tensors one node reads, once, that are no graph output and that no
    subgraph (an If or Loop body) reads."""
    reads: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                reads.setdefault(name, []).append(node)
    elsewhere = {o.name for o in graph.output}
    for node in graph.node:
        elsewhere.update(outer_reads(node))
    return {name: readers[0] for name, readers in reads.items() if len(readers) == 1 and name not in elsewhere}


def _has_compute(tf_type: str) -> bool:
    """Whether the ONNX ops a TF type becomes include one that is not a layout move (a Conv2D's Conv, not a
    Transpose's Transpose); unknown types are taken to compute."""
    listed = ONNX_OPS_OF_TF.get(tf_type)
    return listed is None or any(op not in _LAYOUT_MOVES for op in listed)


def _claim_type_named_compute(graph: Any, origin: dict[str, str | None], tf_types: Mapping[str, str]) -> None:
    """Gives a TF op the ONNX node that computes it where tf2onnx named that node after its type and gave the TF
    name to a layout move after it (ResizeBilinear: `Resize__4`, then the Transpose back to NHWC named `resize`):
    otherwise the op's rule lands on the transpose alone, which only follows what it reads, and the op's dtypes
    (its kernel's fp16 in, fp32 out) are lost. Only a node of no TF op, not itself a layout move, whose every output
    is read by that TF op's nodes alone, is claimed."""
    made_by = {name: node for node in graph.node for name in node.output if name}
    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                readers.setdefault(name, set()).add(node.name)
    owned: dict[str, list[Any]] = {}
    for node in graph.node:
        tf = origin.get(node.name)
        if tf is not None:
            owned.setdefault(tf, []).append(node)
    for tf, nodes in owned.items():
        if not _has_compute(tf_types.get(tf, "")) or any(node.op_type not in _LAYOUT_MOVES for node in nodes):
            continue
        names = {node.name for node in nodes}
        for node in nodes:
            producer = made_by.get(node.input[0]) if node.input else None
            if producer is None or origin.get(producer.name) is not None or producer.op_type in _LAYOUT_MOVES:
                continue
            if all(readers.get(name, set()) <= names for name in producer.output if name):
                origin[producer.name] = tf


def _fused(first: OpPrecision, last: OpPrecision) -> OpPrecision:
    """The rule of one ONNX node computing two TF ops: it reads as the first, stores as the second."""
    reads, stores = _input_dtype(first, 0), _output_dtype(last)
    if reads == stores or not reads or not stores:
        return last if reads == stores or not reads else first
    return OpPrecision(last.node, last.op_type, "follow", last.source, input_dtypes=(reads,), output_dtypes=(stores,))


def _output_dtype(rule: OpPrecision) -> str:
    if rule.output_dtypes:
        return _at(rule.output_dtypes, 0)
    return "float32" if rule.compute == "fp32" else "float16" if rule.compute == "fp16" else ""


def _at(dtypes: tuple[str, ...], position: int) -> str:
    """A per-position dtype list; a shorter list's last entry stands for the positions past it."""
    return dtypes[min(position, len(dtypes) - 1)] if dtypes else ""


def _input_dtype(rule: OpPrecision, position: int) -> str:
    if rule.input_dtypes:
        return _at(rule.input_dtypes, position)
    return "float32" if rule.compute == "fp32" else "float16" if rule.compute == "fp16" else ""


def _elem_types(model: Any) -> dict[str, int]:
    graph = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.output, *graph.value_info)}
    types.update({t.name: t.data_type for t in graph.initializer})
    return {name: kind for name, kind in types.items() if kind}

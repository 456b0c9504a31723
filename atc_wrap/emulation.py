"""Emulating ATC's precision modes on an fp32 ONNX graph; docs/fp16-emulation.md has the measurement behind it.

Converting the model to float16 is not faithful: ONNX Runtime's CPU provider lacks fp16 kernels for most ops and
silently computes whole chains in fp32, so overflows the NPU would hit vanish. Instead the graph stays fp32 and
every float tensor an fp16 op makes is rounded to fp16 right after that op (Cast to float16, Cast back to
float32): fp16 storage with fp32 arithmetic inside each op, as the NPU's cube unit computes (fp16 in, fp32
accumulate, fp16 out). Values past 65504 become inf, and what follows them inf or NaN, as on the device.
"""

from __future__ import annotations

import logging
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from atc_wrap.precision import check_precision_mode
from binio.dtypes import dtype

log = logging.getLogger(__name__)

# allow_mix_precision: op types ATC keeps in fp32 because fp16 loses too much in them.
FP32_OP_TYPES: tuple[str, ...] = (
    "ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
    "ReduceProd", "Softmax", "LogSoftmax", "Exp", "Log", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization", "LpNormalization", "MeanVarianceNormalization",
)
# allow_mix_precision: op types that always compute in fp16 (the cube unit's), their inputs rounded first.
FP16_OP_TYPES: tuple[str, ...] = ("Conv", "ConvTranspose", "MatMul", "Gemm")
# Ops whose float outputs are fp16 values whenever their inputs are: they move or select values of their inputs,
# or (the last four) compute values fp16 holds exactly. No rounding after them.
_VALUE_PRESERVING = frozenset({
    "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Split", "Slice", "Gather",
    "GatherElements", "GatherND", "Expand", "Tile", "MaxPool", "Relu", "ReduceMax", "ReduceMin", "Max", "Min",
    "Neg", "Abs", "DepthToSpace", "SpaceToDepth", "Pad", "Where", "GlobalMaxPool", "Dropout",
    # Not moves, but their results from fp16 values are fp16 values too (integers, or -1/0/1): a rounding after
    # them would change nothing and cost two passes over the tensor.
    "Floor", "Ceil", "Round", "Sign",
})
_NOT_EMULATED = (
    "ATC's fusion passes (conv+bn+relu and others change where roundings happen)",
    "the hardware's accumulation order and its fp32 accumulation width inside an op",
    "ops the NPU only has in fp32 (they are rounded here as if they had fp16 kernels)",
    "the op-specific implementations chosen by --op_select_implmode",
    "tensors inside control-flow subgraphs (If/Loop bodies)",
)
_FLOAT, _FLOAT16 = dtype("float32").onnx, dtype("float16").onnx  # onnx.TensorProto.FLOAT, FLOAT16


@dataclass(frozen=True)
class Emulation:
    """What the stand-in did to emulate a precision mode, recorded in the contract."""

    mode: str
    storage: str  # fp16 | mixed | fp32: where float tensors are rounded to fp16
    rounded_tensors: int = 0  # op outputs and inputs rounded to fp16 by a Cast pair
    rounded_weights: int = 0  # float initializers whose values were rounded to fp16
    fp16_inputs: tuple[str, ...] = ()  # inputs the model takes as float16 (--input-fp16-nodes)
    fp16_outputs: tuple[str, ...] = ()  # outputs it gives as float16 (--output-type)
    untyped_tensors: int = 0  # float-or-not unknown after shape inference: left unrounded

    @property
    def emulated(self) -> tuple[str, ...]:
        if self.storage == "fp32":
            return ("fp32 arithmetic and storage throughout, as ATC keeps it",)
        done = ["fp16 storage: every float tensor an fp16 op makes is rounded to fp16 (Cast pair), overflow "
                "past 65504 gives inf", "fp32 arithmetic inside each op (fp16 in, fp32 accumulate, fp16 out)",
                "float weights rounded to fp16"]
        if self.storage == "mixed":
            done.append(f"{', '.join(FP32_OP_TYPES)} kept in fp32; ops fed only by fp32 tensors stay fp32; "
                        f"{', '.join(FP16_OP_TYPES)} always fp16")
        return tuple(done)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode, "storage": self.storage, "rounded_tensors": self.rounded_tensors,
            "rounded_weights": self.rounded_weights, "fp16_inputs": list(self.fp16_inputs),
            "fp16_outputs": list(self.fp16_outputs), "untyped_tensors": self.untyped_tensors,
            "fp32_op_types": list(FP32_OP_TYPES) if self.storage == "mixed" else [],
            "emulated": list(self.emulated), "not_emulated": list(_NOT_EMULATED),
        }


def storage_for(mode: str) -> str:
    if mode in ("force_fp16", "allow_fp32_to_fp16"):
        return "fp16"
    return "mixed" if mode == "allow_mix_precision" else "fp32"


def emulate_precision(model: Any, mode: str, *, fp16_inputs: Set[str], fp16_outputs: Set[str]) -> Emulation:
    """Rewrites the fp32 ONNX `model` in place to compute as ATC would under `mode`; returns what it did.

    `fp16_inputs` / `fp16_outputs` are graph input / output names the model takes / gives as float16.
    """
    check_precision_mode(mode)
    rewriter = _Rewriter(model, storage_for(mode))
    rewriter.inputs(fp16_inputs)
    rewriter.weights()
    rewriter.nodes()
    rewriter.outputs(fp16_outputs)
    rewriter.finish()
    return Emulation(mode=mode, storage=rewriter.storage, rounded_tensors=rewriter.rounded,
                     rounded_weights=rewriter.rounded_weights, fp16_inputs=tuple(sorted(fp16_inputs)),
                     fp16_outputs=tuple(sorted(fp16_outputs)), untyped_tensors=len(rewriter.untyped))


class _Rewriter:
    """One pass over the graph in its (topological) order, tracking whether each float tensor is fp16 or fp32."""

    def __init__(self, model: Any, storage: str) -> None:
        import onnx

        self.model = model
        self.graph = model.graph
        self.storage = storage
        self.types = _elem_types(onnx.shape_inference.infer_shapes(model))
        self.state: dict[str, str] = {}  # float tensor -> fp16 | fp32
        self.rename: dict[str, str] = {}  # tensor name -> the name its consumers read instead
        self.prefix: list[Any] = []  # nodes inserted before the graph's own
        self.rounded = 0
        self.rounded_weights = 0
        self.untyped: set[str] = set()
        self.changed: set[str] = set()  # names whose value_info is no longer right
        self._rounded_cache: dict[str, str] = {}
        self._names: set[str] = {n.name for n in self.graph.node}

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
            elif self.storage == "fp16":
                # ATC feeds an fp32 input to fp16 ops through a cast at the model's entry.
                rounded = self._unique(f"{name}/rounded")
                self.prefix.extend(self._round_pair(name, rounded))
                self.rename[name] = rounded
                self.state[rounded] = "fp16"
            else:
                self.state[name] = "fp32"

    def weights(self) -> None:
        if self.storage == "fp32":
            return
        import numpy as np
        from onnx import numpy_helper

        consumers: dict[str, list[str]] = {}
        for node in self.graph.node:
            for name in node.input:
                consumers.setdefault(name, []).append(node.op_type)
        for index, tensor in enumerate(self.graph.initializer):
            if tensor.data_type != _FLOAT:
                continue
            keep_fp32 = self.storage == "mixed" and any(op in FP32_OP_TYPES for op in consumers.get(tensor.name, []))
            if keep_fp32:
                self.state[tensor.name] = "fp32"
                continue
            values = numpy_helper.to_array(tensor)
            rounded = values.astype(np.float16).astype(np.float32)
            if not np.array_equal(rounded, values, equal_nan=True):
                self.graph.initializer[index].CopyFrom(numpy_helper.from_array(rounded, tensor.name))
                self.rounded_weights += 1
            self.state[tensor.name] = "fp16"

    def _computes_in_fp16(self, node: Any, float_inputs: list[str]) -> bool:
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
        if self.storage == "fp32" and not self.rename:
            return
        rewritten: list[Any] = list(self.prefix)
        for node in list(self.graph.node):
            for position, name in enumerate(node.input):
                if name in self.rename:
                    node.input[position] = self.rename[name]
            float_inputs = [n for n in node.input if n and (self.types.get(n) == _FLOAT or n in self.state)]
            float_outputs = [n for n in node.output if n and self.types.get(n) == _FLOAT]
            self.untyped.update(n for n in node.output if n and n not in self.types)
            if self.storage == "fp32":
                rewritten.append(node)
                continue
            fp16 = self._computes_in_fp16(node, float_inputs)
            if fp16 and node.op_type in FP16_OP_TYPES:
                for position, name in enumerate(node.input):
                    if name in float_inputs and self.state.get(name) != "fp16":
                        node.input[position] = self._rounded_input(name, rewritten)
            rewritten.append(node)
            if not fp16:
                self.state.update(dict.fromkeys(float_outputs, "fp32"))
                continue
            inputs_fp16 = all(self.state.get(name) == "fp16" for name in float_inputs)
            if node.op_type in _VALUE_PRESERVING and inputs_fp16:
                self.state.update(dict.fromkeys(float_outputs, "fp16"))
                continue
            for position, name in enumerate(node.output):
                if name in float_outputs:
                    raw = self._unique(f"{name}/fp32")
                    node.output[position] = raw
                    rewritten.extend(self._round_pair(raw, name))
                    self.state[name] = "fp16"
        del self.graph.node[:]
        self.graph.node.extend(rewritten)

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
            self.graph.node.append(helper.make_node("Cast", [wide], [name], name=self._unique(f"{name}/narrow"),
                                                    to=_FLOAT16))
            graph_output.type.tensor_type.elem_type = _FLOAT16
            self.changed.add(name)

    def finish(self) -> None:
        kept = [v for v in self.graph.value_info if v.name not in self.changed]
        del self.graph.value_info[:]
        self.graph.value_info.extend(kept)
        if self.untyped:
            log.warning("%d tensors have no type after shape inference and were left unrounded: %s",
                        len(self.untyped), ", ".join(sorted(self.untyped)[:5]))


def _elem_types(model: Any) -> dict[str, int]:
    graph = model.graph
    types = {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.output, *graph.value_info)}
    types.update({t.name: t.data_type for t in graph.initializer})
    return {name: kind for name, kind in types.items() if kind}

"""The stand-in's AIPP stage: ONNX nodes put in front of the converted graph, so it takes uint8 images as the om does.

The stage computes what `atc_wrap.aipp.apply` computes in numpy, in the hardware's order (swap -> crop -> CSC ->
normalisation, min_chn and var_reci_chn as fp16 as the unit holds them), rounds the result to fp16 as AIPP
stores it, then hands it to the model input it replaces (cast to that input's type, transposed for an NCHW
input). The new uint8 input keeps the old input's name, so runners feed
the om and the stand-in the same bins.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from atc_wrap.aipp.apply import swap_indices
from atc_wrap.aipp.config import AippConfig, held_fp16
from atc_wrap.errors import ConvertError

_PREFIX = "aipp/"


def _rename_uses(graph: Any, old: str, new: str) -> None:
    """Every read of `old` (subgraphs of If/Loop too, which may read outer names) now reads `new`."""
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for attribute in node.attribute:
            for sub in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
                _rename_uses(sub, old, new)


def insert_aipp_stage(model: Any, input_name: str, config: AippConfig, layout: str, batch: int) -> None:
    """Replaces the model input `input_name` with a uint8 input of `config.input_shape(batch)` and AIPP's nodes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    found = [i for i, value in enumerate(graph.input) if value.name == input_name]
    if not found:
        raise ConvertError(f"AIPP: the converted model has no input {input_name}")
    original = graph.input[found[0]]
    model_type = original.type.tensor_type.elem_type
    if model_type not in (TensorProto.FLOAT, TensorProto.FLOAT16):
        raise ConvertError(f"AIPP: input {input_name} takes {TensorProto.DataType.Name(model_type).lower()}; AIPP "
                           "feeds float (fp16) values to a float input")
    inner = f"{_PREFIX}{input_name}"
    _rename_uses(graph, input_name, inner)
    for output in graph.output:  # an input that is also an output stays readable under its old meaning
        if output.name == input_name:
            raise ConvertError(f"AIPP: input {input_name} is also an output of the model")
    nodes: list[Any] = []
    constants: list[Any] = []
    counter = [0]

    def name(base: str) -> str:
        counter[0] += 1
        return f"{_PREFIX}{base}_{counter[0]}"

    def const(values: Any, dtype: Any) -> str:
        tensor_name = name("const")
        constants.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), tensor_name))
        return tensor_name

    def op(kind: str, inputs: list[str], **attrs: Any) -> str:
        out = name(kind.lower())
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    width, height = config.src_size
    x = op("Cast", [input_name], to=TensorProto.FLOAT)
    if config.input_format == "YUV420SP_U8":
        y = op("Slice", [x, const([0], np.int64), const([height], np.int64), const([1], np.int64)])
        uv = op("Slice", [x, const([height], np.int64), const([height * 3 // 2], np.int64), const([1], np.int64)])
        # (N, H/2, W, 1) -> (N, H/2, 1, W/2, 1, 2) -> tiled 2x2 -> (N, H, W, 2): each U/V pair over its block
        uv = op("Reshape", [uv, const([batch, height // 2, 1, width // 2, 1, 2], np.int64)])
        uv = op("Tile", [uv, const([1, 1, 2, 1, 2, 1], np.int64)])
        uv = op("Reshape", [uv, const([batch, height, width, 2], np.int64)])
        x = op("Concat", [y, uv], axis=3)
    elif config.input_format == "XRGB8888_U8":
        x = op("Gather", [x, const([1, 2, 3] if config.ax_swap_switch else [0, 1, 2], np.int64)], axis=3)
    order = swap_indices(config)
    if order != list(range(config.output_channels)):
        x = op("Gather", [x, const(order, np.int64)], axis=3)
    if config.crop:
        top, left = config.load_start_pos_h, config.load_start_pos_w
        x = op("Slice", [x, const([top, left], np.int64),
                         const([top + config.crop_size_h, left + config.crop_size_w], np.int64),
                         const([1, 2], np.int64)])
    if config.csc_switch:
        matrix_t = const(np.asarray(config.matrix, dtype=np.float32).T, np.float32)
        if config.is_yuv:
            x = op("Sub", [x, const(config.input_bias, np.float32)])
            x = op("Floor", [op("Div", [op("MatMul", [x, matrix_t]), const(256.0, np.float32)])])
        else:
            x = op("Floor", [op("Div", [op("MatMul", [x, matrix_t]), const(256.0, np.float32)])])
            x = op("Add", [x, const(config.output_bias, np.float32)])
        x = op("Min", [op("Max", [x, const(0.0, np.float32)]), const(255.0, np.float32)])
    channels = config.output_channels
    x = op("Sub", [x, const(config.mean_chn[:channels], np.float32)])
    x = op("Sub", [x, const(held_fp16(config.min_chn[:channels]), np.float32)])
    x = op("Mul", [x, const(held_fp16(config.var_reci_chn[:channels]), np.float32)])
    x = op("Cast", [x], to=TensorProto.FLOAT16)  # AIPP stores its output as fp16
    if model_type == TensorProto.FLOAT:
        x = op("Cast", [x], to=TensorProto.FLOAT)
    if layout == "NCHW":
        x = op("Transpose", [x], perm=[0, 3, 1, 2])
    nodes.append(helper.make_node("Identity", [x], [inner], name=inner))
    new_input = helper.make_tensor_value_info(input_name, TensorProto.UINT8, list(config.input_shape(batch)))
    graph.input.remove(original)
    graph.input.insert(found[0], new_input)
    graph.initializer.extend(constants)
    existing = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + existing)
    onnx.checker.check_model(model)

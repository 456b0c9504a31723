"""A small TensorFlow model converted as ATC would lay it out in an om, for the NPU-dump tests.

The model: conv (NHWC) + bias + relu, a reshape, a dense layer, and a random branch added to it:
``out = dense(flat(relu(conv(x) + b))) + 0.5 * RandomStandardNormal([2, 10])``. Its om, written by the test's own
writer (tests/atc_wrap/ascend_writer.py), holds what the real AutoEncoder om holds for such ops: the conv, bias
and relu fused into one Conv2D op with an NC1HWC0 output, the matmul and bias into a MatMulV2 with a FRACTAL_NZ
output, ATC's own TransData and Cast ops between them (no TF node), the random op as an unfused FrameworkOp that
keeps its TF name and has no fusion attributes, and ops left as they were (the reshape, the mul, the add).

`npu_model(folder)` gives the contract of that om (converted target ``om``) with the ONNX stand-in beside it as
``model.onnx`` (what the fake msame and ais_bench compute their outputs with) and the pb its `atc_cmdline` names.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from binio.binfile import sha256_file
from infer.contract import ModelContract
from tests.atc_wrap.ascend_writer import GE_FLOAT, GE_FLOAT16, Desc, Op, model_def, om_bytes
from tests.builders.frozen import write_frozen

CONV_OP = "conv/Conv2D"  # fuses conv/Conv2D, conv/BiasAdd, relu
DENSE_OP = "dense/MatMul"  # fuses dense/MatMul, dense/BiasAdd
CONV_NODES = ("conv/Conv2D", "conv/BiasAdd", "relu")
DENSE_NODES = ("dense/MatMul", "dense/BiasAdd")
BATCH = 2


def build_npu_cnn(tf: Any, *, random: bool = True) -> None:
    rng = np.random.default_rng(0)
    x = tf.compat.v1.placeholder(tf.float32, [BATCH, 8, 8, 3], name="x")
    with tf.name_scope("conv"):
        conv = tf.nn.conv2d(x, tf.constant(rng.normal(size=(3, 3, 3, 4)).astype(np.float32)), 1, "SAME",
                            name="Conv2D")
        bias = tf.nn.bias_add(conv, tf.constant(rng.normal(size=4).astype(np.float32)), name="BiasAdd")
    relu = tf.nn.relu(bias, name="relu")
    flat = tf.reshape(relu, [BATCH, 256], name="flat")
    with tf.name_scope("dense"):
        matmul = tf.matmul(flat, tf.constant((rng.normal(size=(256, 10)) / 16).astype(np.float32)), name="MatMul")
        logits = tf.nn.bias_add(matmul, tf.constant(rng.normal(size=10).astype(np.float32)), name="BiasAdd")
    if random:
        noise = tf.raw_ops.RandomStandardNormal(shape=[BATCH, 10], dtype=tf.float32, name="noise")
        tf.add(logits, tf.multiply(noise, 0.5, name="scaled"), name="out")
    else:
        tf.identity(logits, name="out")


def _fp16(shape: tuple[int, ...], layout: str, origin_format: str, origin_shape: tuple[int, ...], **kw: Any) -> Desc:
    return Desc(GE_FLOAT16, shape, layout, origin_format, origin_shape, **kw)


def npu_ops(*, random: bool = True) -> list[Op]:
    """The om's graph for `build_npu_cnn`, in execution order."""
    b = BATCH
    ops = [
        Op("x", "Data", input_descs=[Desc(GE_FLOAT, (b, 8, 8, 3), "NHWC", "NHWC", (b, 8, 8, 3), size=4 * b * 192)],
           output_descs=[Desc(GE_FLOAT, (b, 8, 8, 3), "NHWC", "NHWC", (b, 8, 8, 3))], attrs={"index": 0}),
        Op("trans_TransData_0", "TransData", inputs=["x:0"],
           input_descs=[Desc(GE_FLOAT, (b, 8, 8, 3), "NHWC", "NHWC", (b, 8, 8, 3))],
           output_descs=[_fp16((b, 1, 8, 8, 16), "NC1HWC0", "NHWC", (b, 8, 8, 3))],
           attrs={"_datadump_original_op_names": []}),
        Op("conv_weight", "Const", output_descs=[_fp16((9, 1, 16, 16), "FRACTAL_Z", "HWCN", (3, 3, 3, 4))],
           attrs={"_datadump_original_op_names": []}),
        Op(CONV_OP, "Conv2D", inputs=["trans_TransData_0:0", "conv_weight:0"],
           input_descs=[_fp16((b, 1, 8, 8, 16), "NC1HWC0", "NHWC", (b, 8, 8, 3)),
                        _fp16((9, 1, 16, 16), "FRACTAL_Z", "HWCN", (3, 3, 3, 4))],
           output_descs=[_fp16((b, 1, 8, 8, 16), "NC1HWC0", "NHWC", (b, 8, 8, 4), origin_name="relu",
                               origin_output_index=0)],
           attrs={"_datadump_original_op_names": list(CONV_NODES)}),
        Op("trans_TransData_1", "TransData", inputs=[f"{CONV_OP}:0"],
           input_descs=[_fp16((b, 1, 8, 8, 16), "NC1HWC0", "NHWC", (b, 8, 8, 4))],
           output_descs=[_fp16((b, 8, 8, 4), "NHWC", "NHWC", (b, 8, 8, 4))],
           attrs={"_datadump_original_op_names": []}),
        Op("flat", "Reshape", inputs=["trans_TransData_1:0"],
           input_descs=[_fp16((b, 8, 8, 4), "NHWC", "NHWC", (b, 8, 8, 4))],
           output_descs=[_fp16((b, 256), "ND", "ND", (b, 256))]),
        Op(DENSE_OP, "MatMulV2", inputs=["flat:0"], input_descs=[_fp16((b, 256), "ND", "ND", (b, 256))],
           output_descs=[_fp16((1, 1, 16, 16), "FRACTAL_NZ", "ND", (b, 10), origin_name="dense/BiasAdd",
                               origin_output_index=0)],
           attrs={"_datadump_original_op_names": list(DENSE_NODES)}),
        Op("trans_TransData_2", "TransData", inputs=[f"{DENSE_OP}:0"],
           input_descs=[_fp16((1, 1, 16, 16), "FRACTAL_NZ", "ND", (b, 10))],
           output_descs=[_fp16((b, 10), "ND", "ND", (b, 10))], attrs={"_datadump_original_op_names": []}),
    ]
    last = "trans_TransData_2"
    if random:
        ops += [
            Op("noise", "FrameworkOp", output_descs=[Desc(GE_FLOAT, (b, 10), "ND", "ND", (b, 10))]),
            Op("trans_Cast_0", "Cast", inputs=["noise:0"], input_descs=[Desc(GE_FLOAT, (b, 10), "ND", "ND", (b, 10))],
               output_descs=[_fp16((b, 10), "ND", "ND", (b, 10))], attrs={"_datadump_original_op_names": []}),
            Op("scaled", "Mul", inputs=["trans_Cast_0:0"], input_descs=[_fp16((b, 10), "ND", "ND", (b, 10))],
               output_descs=[_fp16((b, 10), "ND", "ND", (b, 10))]),
            Op("out", "Add", inputs=["trans_TransData_2:0", "scaled:0"],
               input_descs=[_fp16((b, 10), "ND", "ND", (b, 10)), _fp16((b, 10), "ND", "ND", (b, 10))],
               output_descs=[_fp16((b, 10), "ND", "ND", (b, 10))]),
        ]
        last = "out"
    ops += [
        Op("trans_Cast_1", "Cast", inputs=[f"{last}:0"], input_descs=[_fp16((b, 10), "ND", "ND", (b, 10))],
           output_descs=[Desc(GE_FLOAT, (b, 10), "ND", "ND", (b, 10))], attrs={"_datadump_original_op_names": []}),
        Op("Node_Output", "NetOutput", inputs=["trans_Cast_1:0"],
           input_descs=[Desc(GE_FLOAT, (b, 10), "ND", "ND", (b, 10), size=4 * b * 10)],
           src_names=["trans_Cast_1"], src_indexes=[0]),
    ]
    return ops


def write_npu_om(path: Path, pb: Path, *, random: bool = True) -> Path:
    """The om of `build_npu_cnn` at `path`, its `atc_cmdline` naming `pb` (the fakes' device computes from it)."""
    name = path.stem
    attrs = {"soc_version": "Ascend310", "atc_version": "1.80.T15.0.B156", "framework_type": "TensorFlow",
             "target_type": "MINI", "attr_model_out_nodes_name": ["out:0"],
             "atc_cmdline": f"atc --model={pb.resolve()} --framework=3 --output={path.with_suffix('')} "
                            f"--soc_version=Ascend310 --input_shape=x:{BATCH},8,8,3"}
    definition = model_def(npu_ops(random=random), attrs, name=name)
    path.write_bytes(om_bytes([(0, definition), (1, b"\x00" * 64), (3, b"kernels"), (2, b"tasks")], name=name))
    return path


def npu_model(folder: Path, *, random: bool = True) -> ModelContract:
    """The contract of the om of `build_npu_cnn` (converted target om, precision force_fp16), the pb and the
    ONNX stand-in beside it."""
    from infer.convert._convert import ConvertOptions, convert_model

    stand_in = folder.parent / f"{folder.name}-onnx"
    frozen = write_frozen(stand_in, lambda tf: build_npu_cnn(tf, random=random), ("x:0",), ("out:0",))
    contract = convert_model(frozen, ConvertOptions(target="onnx", precision_mode="force_fp32")).contract
    assert contract.converted is not None
    shutil.copytree(contract.folder, folder)
    om = write_npu_om(folder / "model.om", folder / contract.pb)
    if contract.converted.path != "model.onnx":
        shutil.copyfile(folder / contract.converted.path, folder / "model.onnx")
    converted = replace(contract.converted, target="om", path=om.name, sha256=sha256_file(om),
                        soc_version="Ascend310", precision_mode="force_fp16")
    return replace(contract, path=folder / contract.path.name, converted=converted).save()

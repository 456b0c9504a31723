"""A small model as ATC lays it out in an om (the shapes and attributes follow what the real AutoEncoder om of
Ascend/ModelZoo-TensorFlow holds), written with the test's own writer: two inputs, a fused convolution with an
NC1HWC0 output, a matmul with a FRACTAL_NZ output, a FRACTAL_Z weight, and the NetOutput."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.atc_wrap.ascend_writer import GE_FLOAT, GE_FLOAT16, Desc, Op, model_def, om_bytes

CONV = "scope/conv/Conv2D"
MATMUL = "scope/dense/MatMul"
CONV_OUT = Desc(GE_FLOAT16, (2, 2, 4, 4, 16), "NC1HWC0", "NHWC", (2, 4, 4, 20), origin_name="scope/conv/add",
                origin_output_index=0)
MATMUL_OUT = Desc(GE_FLOAT16, (1, 1, 16, 16), "FRACTAL_NZ", "ND", (2, 10), origin_name="scope/dense/BiasAdd",
                  origin_output_index=0)
WEIGHT = Desc(GE_FLOAT16, (9, 2, 16, 16), "FRACTAL_Z", "HWCN", (3, 3, 1, 20))


def sample_ops() -> list[Op]:
    return [
        # inputs listed out of order: their `index` attribute decides
        Op("labels", "Data", input_descs=[Desc(GE_FLOAT, (2, 10), "NHWC", "NHWC", (2, 10), size=80)],
           output_descs=[Desc(GE_FLOAT, (2, 10), "NHWC", "NHWC", (2, 10), size=96)], attrs={"index": 1}),
        Op("image", "Data", input_descs=[Desc(GE_FLOAT, (2, 8, 8, 1), "NHWC", "NHWC", (2, 8, 8, 1), size=512)],
           output_descs=[Desc(GE_FLOAT, (2, 8, 8, 1), "NHWC", "NHWC", (2, 8, 8, 1), size=544)], attrs={"index": 0}),
        Op("weight", "Const", output_descs=[WEIGHT]),
        Op(CONV, "Conv2D", inputs=["image:0", "weight:0"], output_descs=[CONV_OUT],
           attrs={"_datadump_original_op_names": ["scope/conv/add", "scope/conv/Conv2D"]}),
        Op("trans_TransData_1", "TransData", inputs=[f"{CONV}:0"],
           output_descs=[Desc(GE_FLOAT16, (2, 320), "NHWC", "NHWC", (2, 320))],
           attrs={"_datadump_original_op_names": []}),
        Op(MATMUL, "MatMulV2", inputs=["trans_TransData_1:0"], output_descs=[MATMUL_OUT],
           attrs={"_datadump_original_op_names": ["scope/dense/MatMul", "scope/dense/BiasAdd"]}),
        Op("trans_Cast_2", "Cast", inputs=[f"{MATMUL}:0"],
           output_descs=[Desc(GE_FLOAT, (2, 10), "NHWC", "NHWC", (2, 10))]),
        Op("trans_Cast_3", "Cast", inputs=[f"{CONV}:0"],
           output_descs=[Desc(GE_FLOAT, (2, 4, 4, 20), "NHWC", "NHWC", (2, 4, 4, 20))]),
        Op("Node_Output", "NetOutput", inputs=["trans_Cast_2:0", "trans_Cast_3:0"],
           input_descs=[Desc(GE_FLOAT, (2, 10), "NHWC", "NHWC", (2, 10), size=96),
                        Desc(GE_FLOAT, (2, 4, 4, 20), "NHWC", "NHWC", (2, 4, 4, 20), size=1280)],
           src_names=["trans_Cast_2", "trans_Cast_3"], src_indexes=[0, 0]),
    ]


MODEL_ATTRS: dict[str, Any] = {
    "soc_version": "Ascend310", "atc_version": "1.80.T15.0.B156", "opp_version": "1.80.T15.0.B156",
    "framework_type": "TensorFlow", "target_type": "MINI",
    "attr_model_out_nodes_name": ["scope/dense/BiasAdd:0", "scope/conv/add:0"],
    "tasks": b"\x00" * 64, "memory_size": 1024,
}


def write_sample_om(folder: Path, *, version: int = 0x20000000, ops: list[Op] | None = None,
                    attrs: dict[str, Any] | None = None, name: str = "sample") -> Path:
    path = folder / f"{name}.om"
    definition = model_def(ops if ops is not None else sample_ops(), MODEL_ATTRS if attrs is None else attrs,
                           name=name)
    path.write_bytes(om_bytes([(0, definition), (1, b"\x00" * 128), (3, b"kernels"), (2, b"tasks")],
                              version=version, name=name))
    return path

"""The om's fusion map against a TF graph's node names, and a dumped output turned back into TF's layout by the
origin the om, else the dump, records: no TensorFlow needed. The om and the dumps are the test's own writer's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from atc_wrap.ascend_files.npu_dump import read_npu_dump
from atc_wrap.ascend_files.om_model import read_om
from infer.compare._npu.dump_set import NpuDumpSet
from infer.compare._npu.fusion_map import match_fusion
from infer.compare._npu.layers import npu_value
from tests.atc_wrap.ascend_samples import CONV, MATMUL, sample_ops, write_sample_om
from tests.atc_wrap.ascend_writer import GE_FLOAT, GE_FLOAT16, Desc, DumpTensorSpec, Op, dump_bytes
from tests.atc_wrap.npu_layout_reference import nchw_to_nc1hwc0

TF_NODES = {"image", "labels", "scope/conv/Conv2D", "scope/conv/add", "scope/dense/MatMul", "scope/dense/BiasAdd",
            "scope/split", "scope/flat"}


def _om(tmp_path: Path) -> Path:
    extra = [
        # kept its TF name, no fusion attributes: output i is the node's output i (two outputs here)
        Op("scope/split", "SplitD", inputs=[f"{MATMUL}:0"],
           output_descs=[Desc(GE_FLOAT16, (2, 5), "ND", "ND", (2, 5)), Desc(GE_FLOAT16, (2, 5), "ND", "ND", (2, 5))]),
        # an output without origin attributes on an op of two TF nodes: which node it holds is not known
        Op("scope/twofold", "Add", inputs=[f"{MATMUL}:0"], output_descs=[Desc(GE_FLOAT, (2, 10), "ND", "ND", (2, 10))],
           attrs={"_datadump_original_op_names": ["scope/dense/MatMul", "scope/flat"]}),
    ]
    return write_sample_om(tmp_path, ops=sample_ops()[:-1] + extra + sample_ops()[-1:])


def test_fused_ops_own_name_ops_and_atcs_own_ops(tmp_path: Path) -> None:
    match = match_fusion(read_om(_om(tmp_path)), TF_NODES)
    conv = match.outputs["scope/conv/add:0"]
    assert (conv.op_name, conv.op_type, conv.index, conv.fused_nodes) == (CONV, "Conv2D", 0,
                                                                          ("scope/conv/add", "scope/conv/Conv2D"))
    assert conv.origin_format == "NHWC" and conv.tensor.origin_shape == (2, 4, 4, 20)
    assert match.outputs["scope/dense/BiasAdd:0"].op_name == MATMUL
    assert [match.outputs[f"scope/split:{i}"].index for i in (0, 1)] == [0, 1]
    assert match.computed_by["scope/conv/Conv2D"].name == CONV  # fused in, not an output of its own
    assert "scope/flat:0" not in match.outputs and match.computed_by["scope/flat"].name == "scope/twofold"
    # ATC's own ops (no TF node) and the weights: nothing to compare them with
    assert [op.name for op in match.unnamed] == ["trans_TransData_1", "trans_Cast_2", "trans_Cast_3"]
    assert "image:0" not in match.outputs  # a Data op is no computation


def _dump_set(folder: Path, files: dict[str, bytes]) -> NpuDumpSet:
    dumps = {}
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data)
        dumps[read_npu_dump(path).op_name] = read_npu_dump(path)
    return NpuDumpSet(root=folder, stem="000000", batch_reason="", dumps=dumps, unreadable={}, run_folder=None)


def test_the_oms_origin_turns_a_layout_back_before_the_dumps(tmp_path: Path) -> None:
    match = match_fusion(read_om(_om(tmp_path)), TF_NODES)
    nhwc = np.random.default_rng(0).standard_normal((2, 4, 4, 20)).astype(np.float16)
    device = nchw_to_nc1hwc0(nhwc.transpose(0, 3, 1, 2), 16)
    # the dump claims another origin shape: the om's word is taken; a field of a newer DumpData is skipped
    data = dump_bytes(CONV, [], [DumpTensorSpec(device, "NC1HWC0", original_name="scope/conv/add",
                                                original_format="NCHW", original_shape=(2, 20, 4, 4))],
                      future_field="a field this reader does not know")
    value = npu_value(match.outputs["scope/conv/add:0"],
                      _dump_set(tmp_path, {"Conv2D.scope_conv_Conv2D.1.1.1700000000000001": data}))
    assert value.value is not None and np.array_equal(value.value, nhwc)
    assert value.layout == "NC1HWC0 [2, 2, 4, 4, 16] turned into NHWC [2, 4, 4, 20] (the om's origin)"


def test_without_the_oms_origin_the_dumps_is_used_and_without_either_nothing_is_guessed(tmp_path: Path) -> None:
    ops = sample_ops()
    conv = ops[3]
    conv.output_descs = [Desc(GE_FLOAT16, (2, 2, 4, 4, 16), "NC1HWC0", origin_name="scope/conv/add",
                              origin_output_index=0)]  # no origin_format, no origin_shape
    match = match_fusion(read_om(write_sample_om(tmp_path, ops=ops)), TF_NODES)
    output = match.outputs["scope/conv/add:0"]
    nhwc = np.random.default_rng(1).standard_normal((2, 4, 4, 20)).astype(np.float16)
    device = nchw_to_nc1hwc0(nhwc.transpose(0, 3, 1, 2), 16)
    with_origin = dump_bytes(CONV, [], [DumpTensorSpec(device, "NC1HWC0", original_name="scope/conv/add",
                                                       original_format="NHWC", original_shape=(2, 4, 4, 20))])
    value = npu_value(output, _dump_set(tmp_path, {"Conv2D.scope_conv_Conv2D.1.1.1700000000000001": with_origin}))
    assert value.value is not None and np.array_equal(value.value, nhwc) and value.layout.endswith("(the dump's "
                                                                                                    "origin)")
    bare = dump_bytes(CONV, [], [DumpTensorSpec(device, "NC1HWC0")])
    value = npu_value(output, _dump_set(tmp_path, {"Conv2D.scope_conv_Conv2D.1.1.1700000000000001": bare}))
    assert value.value is None
    assert value.layout == ("layout not known: neither the om nor the dump gives the origin format and shape of "
                            "NC1HWC0 [2, 2, 4, 4, 16]")


def test_an_op_with_no_dump_file_and_a_dump_without_outputs(tmp_path: Path) -> None:
    match = match_fusion(read_om(_om(tmp_path)), TF_NODES)
    empty = _dump_set(tmp_path, {})
    assert npu_value(match.outputs["scope/conv/add:0"], empty).layout == f"no dump file of NPU op {CONV} in {tmp_path}"
    inputs_only = dump_bytes(CONV, [DumpTensorSpec(np.zeros((2, 8, 8, 1), np.float16), "NHWC")], [])
    value = npu_value(match.outputs["scope/conv/add:0"],
                      _dump_set(tmp_path, {"Conv2D.scope_conv_Conv2D.1.1.1700000000000001": inputs_only}))
    assert value.layout == ("Conv2D.scope_conv_Conv2D.1.1.1700000000000001 holds 0 output(s), not output 0 (dumped "
                            "with dump_mode input?)")

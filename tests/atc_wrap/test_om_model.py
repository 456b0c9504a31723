"""An om written by the test's own writer reads back as ATC's loader would see it: inputs in `index` order,
outputs named by the rule GE's loader uses, device and origin layouts, op counts, the fusion map, AIPP, gears."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.ascend_files.errors import OmFileError
from atc_wrap.ascend_files.ge_attrs import Opaque
from atc_wrap.ascend_files.om_model import read_om
from tests.atc_wrap.ascend_samples import CONV, MATMUL, MODEL_ATTRS, sample_ops, write_sample_om
from tests.atc_wrap.ascend_writer import GE_FLOAT, Desc, Op, model_def, om_bytes


@pytest.mark.parametrize("version", [0x10000000, 0x20000000])
def test_model_attributes_and_header(tmp_path: Path, version: int) -> None:
    model = read_om(write_sample_om(tmp_path, version=version))
    assert model.header.version == version
    assert (model.name, model.soc_version, model.atc_version, model.framework_type, model.target_type) == \
        ("sample", "Ascend310", "1.80.T15.0.B156", "TensorFlow", "MINI")
    assert model.out_node_names == ("scope/dense/BiasAdd:0", "scope/conv/add:0")
    assert model.attr("tasks") == Opaque("bytes", 64)
    assert model.attr("memory_size") == 1024


def test_inputs_follow_their_index_attribute(tmp_path: Path) -> None:
    model = read_om(write_sample_om(tmp_path))
    assert [(i.index, i.name, i.tensor.dtype, i.tensor.shape, i.tensor.format, i.tensor.size)
            for i in model.inputs] == [(0, "image", "float32", (2, 8, 8, 1), "NHWC", 512),
                                       (1, "labels", "float32", (2, 10), "NHWC", 80)]


def test_outputs_are_named_by_the_out_nodes_when_there_is_one_per_output(tmp_path: Path) -> None:
    model = read_om(write_sample_om(tmp_path))
    assert [(o.index, o.name, o.op_name, o.tensor.shape) for o in model.outputs] == [
        (0, "scope/dense/BiasAdd:0", "trans_Cast_2", (2, 10)), (1, "scope/conv/add:0", "trans_Cast_3", (2, 4, 4, 20))]


def test_out_node_names_without_an_index_get_the_source_index(tmp_path: Path) -> None:
    attrs = {**MODEL_ATTRS, "attr_model_out_nodes_name": ["scope/dense/BiasAdd", "scope/conv/add"]}
    model = read_om(write_sample_om(tmp_path, attrs=attrs))
    assert [o.name for o in model.outputs] == ["scope/dense/BiasAdd:0", "scope/conv/add:0"]


def test_outputs_without_matching_out_nodes_get_ges_fallback_names(tmp_path: Path) -> None:
    attrs = {key: value for key, value in MODEL_ATTRS.items() if key != "attr_model_out_nodes_name"}
    model = read_om(write_sample_om(tmp_path, attrs=attrs))
    assert [o.name for o in model.outputs] == ["output_0_trans_Cast_2_0", "output_1_trans_Cast_3_0"]
    assert model.soc_version == "Ascend310"


def test_op_counts_most_frequent_first(tmp_path: Path) -> None:
    model = read_om(write_sample_om(tmp_path))
    assert model.op_counts == (("Cast", 2), ("Data", 2), ("Const", 1), ("Conv2D", 1), ("MatMulV2", 1),
                               ("NetOutput", 1), ("TransData", 1))


def test_the_fusion_map_names_the_tf_nodes_and_each_outputs_origin(tmp_path: Path) -> None:
    model = read_om(write_sample_om(tmp_path))
    fused = {entry.op_name: entry for entry in model.fusion_map}
    assert set(fused) == {CONV, MATMUL}
    conv = fused[CONV]
    assert conv.op_type == "Conv2D"
    assert conv.original_op_names == ("scope/conv/add", "scope/conv/Conv2D")
    (out,) = conv.outputs
    assert (out.origin_name, out.origin_output_index, out.format, out.shape, out.origin_format, out.origin_shape,
            out.dtype) == ("scope/conv/add", 0, "NC1HWC0", (2, 2, 4, 4, 16), "NHWC", (2, 4, 4, 20), "float16")
    (matmul_out,) = fused[MATMUL].outputs
    assert (matmul_out.format, matmul_out.origin_format, matmul_out.origin_shape) == ("FRACTAL_NZ", "ND", (2, 10))


def test_aipp_parameters_are_read_from_the_data_op(tmp_path: Path) -> None:
    ops = sample_ops()
    ops[1].attrs["aipp"] = {"__name__": "aipp", "aipp_mode": 1, "input_format": "YUV420SP_U8", "csc_switch": True,
                            "src_image_size_w": 224, "mean_chn_0": 104}
    model = read_om(write_sample_om(tmp_path, ops=ops))
    (aipp,) = model.aipp
    assert aipp.op_name == "image"
    assert aipp.get("input_format") == "YUV420SP_U8"
    assert (aipp.get("aipp_mode"), aipp.get("csc_switch"), aipp.get("src_image_size_w")) == (1, True, 224)


def test_dynamic_batch_gears_are_read_from_the_switching_op(tmp_path: Path) -> None:
    ops = sample_ops()
    ops.insert(2, Op("ascend_mbatch_shape_case", "Case", attrs={
        "_batch_num": 3, "_pred_value_0": [1], "_pred_value_1": [4], "_pred_value_2": [8],
        "mbatch_dynamic_type": 1, "user_designate_shape_order": ["image"]}))
    ops[-1].attrs["all_gears_info"] = "1;4;8"
    model = read_om(write_sample_om(tmp_path, ops=ops))
    assert model.gears is not None
    assert (model.gears.kind, model.gears.gears, model.gears.shape_order, model.gears.all_gears_info,
            model.gears.op_name) == ("batch", ((1,), (4,), (8,)), ("image",), "1;4;8", "ascend_mbatch_shape_case")


def test_a_static_model_has_no_gears(tmp_path: Path) -> None:
    assert read_om(write_sample_om(tmp_path)).gears is None


def test_an_om_without_model_def_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "weights_only.om"
    path.write_bytes(om_bytes([(1, b"w" * 8)]))
    with pytest.raises(OmFileError, match="no MODEL_DEF partition: expected one, found WEIGHTS_DATA"):
        read_om(path)


def test_a_model_def_that_is_not_a_protobuf_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "garbage.om"
    path.write_bytes(om_bytes([(0, b"\x0a\xff\xff\xff\x0f")]))
    with pytest.raises(OmFileError, match=r"garbage\.om: its MODEL_DEF partition is not a GE ModelDef: ModelDef: "
                                          r"field 1 at byte 0 declares 33554431 bytes, only 0 follow"):
        read_om(path)


def test_an_unknown_dtype_is_named_not_fatal(tmp_path: Path) -> None:
    ops = [Op("x", "Data", input_descs=[Desc(27, (4,), "ND")]),
           Op("out", "NetOutput", input_descs=[Desc(GE_FLOAT, (4,), "ND")], src_names=["x"], src_indexes=[0])]
    path = tmp_path / "bf16.om"
    path.write_bytes(om_bytes([(0, model_def(ops, {}))]))
    model = read_om(path)
    assert model.inputs[0].tensor.dtype == "bfloat16"
    assert model.soc_version == ""


def test_the_inspect_json_holds_what_the_issue_lists(tmp_path: Path) -> None:
    import json

    ops = sample_ops()
    ops[1].attrs["aipp"] = {"__name__": "aipp", "aipp_mode": 1}
    shown = json.loads(json.dumps(read_om(write_sample_om(tmp_path, ops=ops)).to_json()))
    assert shown["header"]["version"] == "0x20000000"
    assert shown["soc_version"] == "Ascend310"
    assert [i["name"] for i in shown["inputs"]] == ["image", "labels"]
    assert shown["outputs"][0]["tensor"]["shape"] == [2, 10]
    assert shown["aipp"] == [{"op_name": "image", "params": {"aipp_mode": 1}}]
    assert shown["op_counts"]["Cast"] == 2
    assert shown["fusion_map"][0]["original_op_names"] == ["scope/conv/add", "scope/conv/Conv2D"]

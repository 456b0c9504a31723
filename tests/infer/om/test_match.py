"""An om's own descriptors matched against the frozen pb's (`infer.model_om.match_om`): the om's dtypes and shapes taken
where ATC may have changed them, a mismatch refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.ascend_files.om_model import read_om
from binio.spec import TensorSpec
from infer.model_om import OmDescriptors, OmMismatchError, match_om
from infer.model_om.descriptors import output_dtype_change
from tests.infer.om_files import OmPlan, write_om

IMAGES = TensorSpec("images:0", "float32", (2, 8, 8, 3), "NHWC")
MASK = TensorSpec("mask:0", "int32", (2, 4))
PROBS = TensorSpec("probs:0", "float32", (2, 5))
FEAT = TensorSpec("feat:0", "float32", (2, 4))


def _match(tmp_path: Path, plan: OmPlan, inputs: tuple[TensorSpec, ...] = (IMAGES,),
           outputs: tuple[TensorSpec, ...] = (PROBS,)) -> OmDescriptors:
    return match_om(read_om(write_om(tmp_path / "model.om", plan)), inputs, outputs)


def test_the_oms_own_dtypes_are_taken_under_the_contracts_names(tmp_path: Path) -> None:
    found = _match(tmp_path, OmPlan([IMAGES], [PROBS], input_dtypes={"images:0": "float16"},
                                    output_dtypes={"probs:0": "float16"}))
    assert found.input_specs == (TensorSpec("images:0", "float16", (2, 8, 8, 3), "NHWC"),)
    assert found.output_specs == (TensorSpec("probs:0", "float16", (2, 5)),)
    assert found.notes == ("input images: the om takes float16 where the pb takes float32",
                           "output probs:0: the om gives float16 where the pb gives float32: rounded to float16 on the "
                           "device (--output_type or an fp16 op last): the comparison measures that rounding too")
    assert (found.soc_version, found.made_for()) == ("Ascend310", "an om for Ascend310 (its soc_version)")


def test_a_batch_the_pb_left_open_is_the_oms(tmp_path: Path) -> None:
    open_batch = TensorSpec("images:0", "float32", (None, 8, 8, 3), "NHWC")
    found = _match(tmp_path, OmPlan([IMAGES], [PROBS]), inputs=(open_batch,))
    assert found.input_specs[0].shape == (2, 8, 8, 3)


def test_an_input_of_another_kind_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OmMismatchError) as caught:
        _match(tmp_path, OmPlan([IMAGES, MASK], [PROBS], input_dtypes={"mask:0": "float32"}),
               inputs=(IMAGES, MASK))
    assert caught.value.message == f"{tmp_path / 'model.om'}: input mask: the om takes float32, the frozen pb int32"


def test_another_shape_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OmMismatchError) as caught:
        _match(tmp_path, OmPlan([IMAGES], [PROBS], shapes={"images:0": (4, 8, 8, 3)}))
    assert caught.value.message == (f"{tmp_path / 'model.om'}: input images: the om has shape (4,8,8,3), the frozen "
                                    "pb (2,8,8,3)")


def test_inputs_of_another_name_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OmMismatchError) as caught:
        _match(tmp_path, OmPlan([IMAGES], [PROBS], input_names={"images:0": "input"}))
    assert caught.value.message == (f"{tmp_path / 'model.om'}: the om's inputs are input, the frozen pb's images: "
                                    "images not in the om; input not in the pb")


def test_outputs_in_another_order_are_refused_with_the_order_to_freeze(tmp_path: Path) -> None:
    with pytest.raises(OmMismatchError) as caught:
        _match(tmp_path, OmPlan([IMAGES], [FEAT, PROBS]), outputs=(PROBS, FEAT))
    assert caught.value.message == (f"{tmp_path / 'model.om'}: the om gives its outputs in the order feat:0, probs:0, "
                                    "model.json lists probs:0, feat:0: output i of msame would be compared with "
                                    "another tensor")
    assert caught.value.hint == "freeze again with --outputs feat:0,probs:0"


def test_an_output_the_pb_lacks_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OmMismatchError) as caught:
        _match(tmp_path, OmPlan([IMAGES], [FEAT]))
    assert caught.value.message == (f"{tmp_path / 'model.om'}: the om's outputs are feat:0, the frozen pb's probs:0: "
                                    "feat:0 not in the pb")


def test_outputs_the_om_does_not_name_are_matched_by_position(tmp_path: Path) -> None:
    found = _match(tmp_path, OmPlan([IMAGES], [PROBS], out_nodes=[]))
    assert [(o.spec.name, o.om_name) for o in found.outputs] == [("probs:0", "output_0_trans_Cast_0_0")]
    assert found.notes == ("the om does not name its outputs (output_0_trans_Cast_0_0): matched to the pb's by "
                           "position",)


def test_the_oms_order_of_inputs_is_kept_for_the_tools(tmp_path: Path) -> None:
    found = _match(tmp_path, OmPlan([IMAGES, MASK], [PROBS], input_order=["mask:0", "images:0"]),
                   inputs=(IMAGES, MASK))
    assert [s.name for s in found.input_specs] == ["images:0", "mask:0"]  # model.json's order
    assert [s.name for s in found.fed_order] == ["mask:0", "images:0"]  # msame's --input order


def test_an_aipp_input_takes_the_oms_uint8_images(tmp_path: Path) -> None:
    aipp = {"aipp_mode": 1, "input_format": 3, "src_image_size_w": 8, "src_image_size_h": 8}
    found = _match(tmp_path, OmPlan([IMAGES], [PROBS], input_dtypes={"images:0": "uint8"},
                                    aipp={"images:0": aipp}))
    assert found.inputs[0].aipp and found.input_specs[0].dtype == "uint8"
    assert dict(found.aipp)["images:0"]["input_format"] == 3


def test_the_record_round_trips_through_json(tmp_path: Path) -> None:
    found = _match(tmp_path, OmPlan([IMAGES], [PROBS], batch_gears=[1, 2, 4], shapes={"images:0": (-1, 8, 8, 3),
                                                                                     "probs:0": (-1, 5)}),
                   inputs=(TensorSpec("images:0", "float32", (None, 8, 8, 3), "NHWC"),),
                   outputs=(TensorSpec("probs:0", "float32", (None, 5)),))
    record = found.to_json()
    assert record["gears"] == {"kind": "batch", "values": [[1], [2], [4]]}
    assert record["inputs"] == [{"tensor": "images:0", "index": 0, "dtype": "float32", "shape": [None, 8, 8, 3],
                                 "format": "NHWC", "aipp": False}]
    assert found.gears is not None and found.gears.batches() == (1, 2, 4)


def test_an_oms_batch_gears_become_the_recorded_dynamic_shape(tmp_path: Path) -> None:
    from binio.gears import gear_of
    from infer.model_om.descriptors import dynamic_shape_of

    found = _match(tmp_path, OmPlan([IMAGES], [PROBS], batch_gears=[1, 2, 4], shapes={"images:0": (-1, 8, 8, 3),
                                                                                     "probs:0": (-1, 5)}),
                   inputs=(TensorSpec("images:0", "float32", (None, 8, 8, 3), "NHWC"),),
                   outputs=(TensorSpec("probs:0", "float32", (None, 5)),))
    shape = dynamic_shape_of(found)
    assert shape is not None and shape.batches() == (1, 2, 4)
    assert gear_of(shape, {"images:0": (2, 8, 8, 3)}) == (2,)
    assert dynamic_shape_of(_match(tmp_path / "static", OmPlan([IMAGES], [PROBS]))) is None


@pytest.mark.parametrize(("pb", "om", "says"), [
    ("int32", "float32", "integers up to 2^24 in magnitude are exact in float32"),
    ("int32", "float16", "integers up to 2^11 in magnitude are exact in float16"),
    ("int8", "float32", "every int8 value is exactly a float32, harmless for the comparison"),
    ("bool", "int32", "every bool value is exactly a int32, harmless for the comparison"),
    ("float32", "float16", "rounded to float16 on the device"),
    ("float32", "int32", "not harmless, the fractions show as error"),
    ("int64", "int32", "harmless while the values fit int32's range"),
])
def test_an_output_of_another_dtype_is_the_oms_with_what_that_does_to_the_comparison(
        tmp_path: Path, pb: str, om: str, says: str) -> None:
    # Whether ATC can have made the change is not this reader's to judge: the om's descriptor is how the device's
    # output files are laid out. The claims are numpy's: np.can_cast(pb, om, "safe"), finfo(om).nmant + 1.
    pb_out = TensorSpec("out:0", pb, (2, 5))
    found = _match(tmp_path, OmPlan([IMAGES], [pb_out], output_dtypes={"out:0": om}), outputs=(pb_out,))
    assert found.output_specs == (TensorSpec("out:0", om, (2, 5)),)
    (note,) = found.notes
    assert note.startswith(f"output out:0: the om gives {om} where the pb gives {pb}: ") and says in note
    assert output_dtype_change(pb, om) in note

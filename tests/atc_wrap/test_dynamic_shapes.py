"""ATC's dynamic-shape rules, checked before ATC runs: each refusal names the option, the value and what is allowed;
what passes becomes the gears model.json records and the ATC arguments that make them."""

from __future__ import annotations

from pathlib import Path

import pytest

from atc_wrap.atc.dynamic_shapes import (
    GearRequest,
    check_dynamic,
    gear_argv,
    input_shape_text,
    parse_shape_range,
)
from atc_wrap.errors import ConvertError
from binio.gears import DimRange
from binio.spec import TensorSpec
from infer.contract import load_contract
from tests.atc_wrap.conftest import FakeAtc
from tests.builders.frozen import write_frozen
from tests.cli import run_cli

BATCHED = (TensorSpec("images:0", "float32", (None, 8, 8, 3), "NHWC"),)
SIZED = (TensorSpec("images:0", "float32", (1, None, None, 3), "NHWC"),)
STATIC = (TensorSpec("images:0", "float32", (2, 8, 8, 3), "NHWC"),)
SEQUENCES = (TensorSpec("data:0", "float32", (1, 1, 40, None)), TensorSpec("label:0", "int32", (1, None)),
             TensorSpec("mask:0", "float32", (None, None)))


def test_batch_gears_become_atc_arguments() -> None:
    gears = check_dynamic(BATCHED, GearRequest(dynamic_batch=(1, 4, 8)))
    assert gears is not None and gears.batches() == (1, 4, 8)
    assert gear_argv(gears) == ("--dynamic_batch_size=1,4,8",)
    assert input_shape_text(gears, BATCHED) == "images:-1,8,8,3"


def test_image_size_gears_on_h_and_w() -> None:
    gears = check_dynamic(SIZED, GearRequest(dynamic_image_size=((224, 224), (448, 448))))
    assert gears is not None and gears.kind == "image_size"
    assert gear_argv(gears) == ("--dynamic_image_size=224,224;448,448",)
    nchw = (TensorSpec("x:0", "float32", (1, 3, None, None), "NCHW"),)
    assert check_dynamic(nchw, GearRequest(dynamic_image_size=((16, 16), (32, 32)))) is not None


def test_dims_gears_one_value_per_unknown_dim_in_order() -> None:
    gears = check_dynamic(SEQUENCES, GearRequest(dynamic_dims=((20, 20, 1, 1), (40, 40, 2, 2), (80, 60, 4, 4))))
    assert gears is not None
    assert gear_argv(gears) == ("--dynamic_dims=20,20,1,1;40,40,2,2;80,60,4,4",)
    assert input_shape_text(gears, SEQUENCES) == "data:1,1,40,-1;label:1,-1;mask:-1,-1"


def test_shape_range_goes_into_input_shape() -> None:
    ranges = parse_shape_range("images:1~8,-1,-1,3", "--shape-range")
    assert ranges == (("images", (DimRange(1, 8), DimRange(0, None), DimRange(0, None), 3)),)
    spec = (TensorSpec("images:0", "float32", (None, None, None, 3), "NHWC"),)
    gears = check_dynamic(spec, GearRequest(shape_range=ranges), soc_version="Ascend310P3")
    assert gears is not None and gear_argv(gears) == ()
    assert input_shape_text(gears, spec) == "images:1~8,-1,-1,3"


@pytest.mark.parametrize(("inputs", "request_", "expected"), [
    (STATIC, GearRequest(dynamic_batch=(1, 4, 8)),
     "--dynamic-batch 1,4,8: every input's shape is static (images:0 (2,8,8,3)); ATC would fail with E10031 (a "
     "dynamic option needs a -1 dim in --input_shape)"),
    (BATCHED, GearRequest(dynamic_batch=(4,)), "--dynamic-batch 4: expected 2 to 100 gears (ATC's range), found 1"),
    (BATCHED, GearRequest(dynamic_batch=tuple(range(1, 102))),
     "--dynamic-batch " + ",".join(map(str, range(1, 102))) + ": expected 2 to 100 gears (ATC's range), found 101"),
    (BATCHED, GearRequest(dynamic_batch=(1, 4, 4)),
     "--dynamic-batch 1,4,4: gear 4 is given twice; expected distinct gears"),
    (BATCHED, GearRequest(dynamic_batch=(8, 1, 4)),
     "--dynamic-batch 8,1,4: expected batch sizes in ascending order (1,4,8)"),
    (BATCHED, GearRequest(dynamic_batch=(1, 4), dynamic_image_size=((8, 8), (16, 16))),
     "--dynamic-batch and --dynamic-image-size: ATC takes one dynamic option at a time (--dynamic_batch_size, "
     "--dynamic_image_size, --dynamic_dims or a shape range)"),
    ((TensorSpec("images:0", "float32", (None, None, None, 3), "NHWC"),), GearRequest(dynamic_batch=(1, 4)),
     "--dynamic-batch 1,4: input images:0 (?,?,?,3) has unknown dims besides the batch; --dynamic-batch varies "
     "only the first dim"),
    (BATCHED, GearRequest(dynamic_image_size=((8, 8), (16, 16))),
     "--dynamic-image-size 8,8;16,16: input images:0 (?,8,8,3) must be 4-D with exactly H and W (dims 1, 2 of "
     "NHWC) unknown (-1)"),
    ((TensorSpec("images:0", "float32", (None, None, None, 3), "NHWC"),),
     GearRequest(dynamic_image_size=((8, 8), (16, 16))),
     "--dynamic-image-size 8,8;16,16: input images:0 (?,?,?,3) must be 4-D with exactly H and W (dims 1, 2 of "
     "NHWC) unknown (-1)"),
    (SIZED, GearRequest(dynamic_image_size=((8, 8), (8, 8))),
     "--dynamic-image-size 8,8;8,8: gear 8,8 is given twice; expected distinct gears"),
    (SEQUENCES, GearRequest(dynamic_dims=((20, 20, 1), (40, 40, 2))),
     "--dynamic-dims 20,20,1;40,40,2: gear 20,20,1 gives 3 values; each gear needs one per unknown (-1) dim of "
     "the inputs, in order: 4 (data:0[3], label:0[1], mask:0[0], mask:0[1])"),
    (SEQUENCES, GearRequest(dynamic_dims=((20, 20, 1, 1),)),
     "--dynamic-dims 20,20,1,1: expected 2 to 100 gears (ATC's range), found 1"),
    (BATCHED, GearRequest(), "input images:0: shape (?,8,8,3) has unknown dims; ATC needs static shapes or a "
                             "dynamic option"),
])
def test_refused_before_atc_runs(inputs: tuple[TensorSpec, ...], request_: GearRequest, expected: str) -> None:
    with pytest.raises(ConvertError) as caught:
        check_dynamic(inputs, request_)
    assert caught.value.message == expected


@pytest.mark.parametrize(("spec", "input_format", "expected"), [
    (TensorSpec("seq:0", "float32", (None, None, 8)), "",
     "seq is 3-D and --dynamic-image-size needs 4-D inputs; give --dynamic-dims for its unknown dims"),
    (TensorSpec("x:0", "float32", (None, 3, None, None), "NCHW"), "NCHW",
     "re-freeze with -1 on H and W only, e.g. --inputs 'x[N,3,-1,-1]' (N: the value to fix); other unknown dims "
     "need --dynamic-dims"),
    (TensorSpec("images:0", "float32", (None, None, None, 3), "NHWC"), "",
     "re-freeze with -1 on H and W only, e.g. --inputs 'images[N,-1,-1,3]' (N: the value to fix); other unknown "
     "dims need --dynamic-dims"),
])
def test_an_image_size_refusals_hint_is_built_from_the_inputs_rank_layout_and_dims(
        spec: TensorSpec, input_format: str, expected: str) -> None:
    with pytest.raises(ConvertError) as caught:
        check_dynamic((spec,), GearRequest(dynamic_image_size=((8, 8), (16, 16))), input_format=input_format)
    assert caught.value.hint == expected


def test_a_static_models_hint_names_its_own_input() -> None:
    with pytest.raises(ConvertError) as caught:
        check_dynamic(STATIC, GearRequest(dynamic_batch=(1, 4)))
    assert caught.value.hint == ("re-freeze keeping the dims unknown: infer freeze --batch -1, or -1 in --inputs "
                                 "(e.g. 'images[-1,8,8,3]' for its batch dim)")


def test_dims_and_image_size_refuse_aipp() -> None:
    with pytest.raises(ConvertError) as caught:
        check_dynamic(SEQUENCES, GearRequest(dynamic_dims=((1, 1, 1, 1), (2, 2, 2, 2))), aipp=True)
    assert caught.value.message == ("--dynamic-dims 1,1,1,1;2,2,2,2: not with --aipp (ATC refuses --dynamic_dims "
                                    "with --insert_op_conf)")
    with pytest.raises(ConvertError, match=r"^--dynamic-image-size 8,8;16,16: not with --aipp"):
        check_dynamic(SIZED, GearRequest(dynamic_image_size=((8, 8), (16, 16))), aipp=True)


@pytest.mark.parametrize(("text", "soc", "expected"), [
    ("images:1~8,8,8,3", "Ascend310",
     "--shape-range images:1~8,8,8,3: ATC has no shape range for Ascend310 (Atlas 200/300/500 inference products)"),
    ("images:8~1,8,8,3", "Ascend310P3", "--shape-range images:8~1,8,8,3: input images dim 0 range 8~1 is empty "
                                        "(lo above hi)"),
    ("images:1~8,1~8,8,3", "Ascend310P3",
     "--shape-range images:1~8,1~8,8,3: input images dim 1 is fixed to 8 in the frozen pb (?,8,8,3); only an "
     "unknown dim can range"),
    ("labels:1~8", "", "--shape-range labels:1~8: 'labels' is not an input; inputs are images"),
    ("images:4,8,8,3", "", "--shape-range images:4,8,8,3: no dim is given a range (lo~hi or -1)"),
])
def test_shape_range_refusals(text: str, soc: str, expected: str) -> None:
    with pytest.raises(ConvertError) as caught:
        check_dynamic(BATCHED, GearRequest(shape_range=parse_shape_range(text, "--shape-range")), soc_version=soc)
    assert caught.value.message == expected


def test_shape_range_syntax_is_refused_by_name() -> None:
    with pytest.raises(ConvertError) as caught:
        parse_shape_range("images:1-8,8", "--shape-range")
    assert caught.value.message == "--shape-range 'images:1-8,8': dim '1-8' of images: expected N, lo~hi or -1"


def _build_any_size(tf: object) -> None:
    """images (2,?,?,3) -> mean over H,W: any image size."""
    import tensorflow as tf_

    images = tf_.compat.v1.placeholder(tf_.float32, [2, None, None, 3], name="images")
    tf_.reduce_mean(images, axis=[1, 2], name="pooled")


def _build_sequences(tf: object) -> None:
    """ids (1,?) and mask (?,?): two inputs whose dims vary together, for --dynamic-dims."""
    import tensorflow as tf_

    ids = tf_.compat.v1.placeholder(tf_.float32, [1, None], name="ids")
    mask = tf_.compat.v1.placeholder(tf_.float32, [None, None], name="mask")
    tf_.identity(tf_.reduce_sum(ids) + tf_.reduce_sum(mask), name="total")


@pytest.mark.slow
def test_the_atc_argv_carries_image_size_and_dims_gears(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                                        tmp_path: Path) -> None:
    sized = write_frozen(tmp_path / "sized", _build_any_size, ("images:0",), ("pooled:0",))
    outcome = run_cli(capsys, "convert", sized.path, "--soc-version", "Ascend310", "--dynamic-image-size",
                      "16,16;24,32")
    assert outcome.code == 0, outcome.err
    argv = fake_atc.argv()
    assert "--input_shape=images:2,-1,-1,3" in argv and argv[-1] == "--dynamic_image_size=16,16;24,32"
    recorded = load_contract(sized.path).gears
    assert recorded is not None and recorded.gears == ((16, 16), (24, 32))

    sequences = write_frozen(tmp_path / "seq", _build_sequences, ("ids:0", "mask:0"), ("total:0",))
    outcome = run_cli(capsys, "convert", sequences.path, "--soc-version", "Ascend310", "--dynamic-dims",
                      "8,1,1;16,2,2")
    assert outcome.code == 0, outcome.err
    argv = fake_atc.argv()
    assert "--input_shape=ids:1,-1;mask:-1,-1" in argv and "--input_format=ND" in argv
    assert argv[-1] == "--dynamic_dims=8,1,1;16,2,2"


def test_a_shape_range_goes_into_the_input_shape(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                                 tmp_path: Path) -> None:
    sized = write_frozen(tmp_path / "sized", _build_any_size, ("images:0",), ("pooled:0",))
    outcome = run_cli(capsys, "convert", sized.path, "--soc-version", "Ascend310P3", "--shape-range",
                      "images:2,16~64,-1,3")
    assert outcome.code == 0, outcome.err
    argv = fake_atc.argv()
    assert "--input_shape=images:2,16~64,-1,3" in argv
    assert not any(a.startswith("--dynamic_") for a in argv)


def test_two_dynamic_options_are_refused_on_the_command_line(capsys: pytest.CaptureFixture[str], fake_atc: FakeAtc,
                                                             tmp_path: Path) -> None:
    sized = write_frozen(tmp_path / "sized", _build_any_size, ("images:0",), ("pooled:0",))
    outcome = run_cli(capsys, "convert", sized.path, "--soc-version", "Ascend310", "--dynamic-image-size",
                      "16,16;24,32", "--dynamic-dims", "16,16;24,32")
    assert outcome.code == 2
    assert outcome.error_line == ("error: --dynamic-image-size and --dynamic-dims: ATC takes one dynamic option at a "
                                  "time (--dynamic_batch_size, --dynamic_image_size, --dynamic_dims or a shape "
                                  "range)")
    assert not fake_atc.record.exists()

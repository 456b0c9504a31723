"""binio.gears: gears to shapes and back, and their JSON form read back with its checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from binio.errors import ManifestError
from binio.fields import Fields
from binio.gears import (
    DimRange,
    DynamicShape,
    GearError,
    check_gear_list,
    gear_label,
    gear_of,
    gear_tag,
    parse_gear_list,
    shape_at,
    shapes_at,
)

BATCH = DynamicShape("batch", (("images:0", (None, 8, 8, 3)), ("scale:0", (None, 1))), gears=((1,), (4,), (8,)))
IMAGE = DynamicShape("image_size", (("data:0", (2, 3, None, None)), ("info:0", (2, 4, None, None))),
                     gears=((16, 16), (32, 24)))
DIMS = DynamicShape("dims", (("data:0", (1, 1, 40, None)), ("label:0", (1, None)), ("mask:0", (None, None))),
                    gears=((20, 20, 1, 1), (40, 40, 2, 2)))
RANGE = DynamicShape("range", (("x:0", (None, 16)),), ranges=(DimRange(1, 8),))


def test_shapes_at_each_kind() -> None:
    assert shapes_at(BATCH, (4,)) == {"images:0": (4, 8, 8, 3), "scale:0": (4, 1)}
    assert shapes_at(IMAGE, (32, 24)) == {"data:0": (2, 3, 32, 24), "info:0": (2, 4, 32, 24)}
    assert shapes_at(DIMS, (40, 40, 2, 2)) == {"data:0": (1, 1, 40, 40), "label:0": (1, 40), "mask:0": (2, 2)}
    assert shape_at(RANGE, (5,), "x:0") == (5, 16)


def test_gear_of_finds_the_gear() -> None:
    assert gear_of(BATCH, {"images:0": (8, 8, 8, 3), "scale:0": (8, 1)}) == (8,)
    assert gear_of(IMAGE, {"data:0": (2, 3, 16, 16), "info:0": (2, 4, 16, 16)}) == (16, 16)
    assert gear_of(DIMS, {"data:0": (1, 1, 40, 20), "label:0": (1, 20), "mask:0": (1, 1)}) == (20, 20, 1, 1)
    assert gear_of(RANGE, {"x:0": (8, 16)}) == (8,)


def test_gear_of_refuses_a_shape_that_is_no_gear() -> None:
    with pytest.raises(GearError) as caught:
        gear_of(BATCH, {"images:0": (3, 8, 8, 3), "scale:0": (3, 1)})
    assert caught.value.message == ("images:0 (3,8,8,3), scale:0 (3,1): not a gear of the model, which takes "
                                    "batch gears 1, 4, 8")
    with pytest.raises(GearError, match=r"^input x:0: dim 0 is 9, outside its range 1~8 "):
        gear_of(RANGE, {"x:0": (9, 16)})
    with pytest.raises(GearError, match=r"^input images:0: shape \(4,8,8,1\) does not fit \(\?,8,8,3\)"):
        gear_of(BATCH, {"images:0": (4, 8, 8, 1), "scale:0": (4, 1)})
    # Two batches mixed across inputs are no gear either.
    with pytest.raises(GearError, match="not a gear"):
        gear_of(BATCH, {"images:0": (4, 8, 8, 3), "scale:0": (8, 1)})


def test_labels_and_tags() -> None:
    assert gear_label("image_size", (224, 448)) == "image size 224x448"
    assert [gear_tag(k, g) for k, g in [("batch", (4,)), ("image_size", (2, 3)), ("dims", (1, 9))]] == \
        ["b4", "2x3", "d1_9"]
    assert IMAGE.allowed() == "image size gears 16x16, 32x24"
    assert RANGE.allowed() == "shape ranges x:0[0] 1~8"


@pytest.mark.parametrize("shape", [BATCH, IMAGE, DIMS, RANGE,
                                   DynamicShape("range", (("x:0", (None,)),), ranges=(DimRange(0, None),))])
def test_json_round_trip(shape: DynamicShape) -> None:
    document = json.loads(json.dumps(shape.to_json()))
    assert DynamicShape.from_fields(Fields(document, path=Path("model.json"), entry="converted.gears",
                                           error=ManifestError)) == shape


def test_json_with_a_gear_of_the_wrong_width_is_refused() -> None:
    document = BATCH.to_json() | {"gears": [[1, 2]]}
    with pytest.raises(ManifestError, match=r"^model.json: converted.gears.gears: gear 1,2: expected 1 values"):
        DynamicShape.from_fields(Fields(document, path=Path("model.json"), entry="converted.gears",
                                        error=ManifestError))


def test_parse_gear_list() -> None:
    assert parse_gear_list("1,4,8", option="--dynamic-batch", width=1) == ((1,), (4,), (8,))
    assert parse_gear_list('"224,224;448,448"', option="--dynamic-image-size", width=2) == ((224, 224), (448, 448))
    with pytest.raises(GearError, match=r"^--dynamic-image-size '224;448,448': expected 2 values per gear, "
                                        r"found 1 in '224'$"):
        parse_gear_list("224;448,448", option="--dynamic-image-size", width=2)
    with pytest.raises(GearError,
                       match=r"^--dynamic-batch '1,0': expected whole numbers from 1 to 2147483647, found '0'$"):
        parse_gear_list("1,0", option="--dynamic-batch", width=1)


@pytest.mark.parametrize(("text", "width", "expected"), [
    ("1,,4", 1, "'1,,4': item 2 is empty; expected whole numbers of 1 or more, separated by ','"),
    ("1,4,", 1, "'1,4,': item 3 is empty; expected whole numbers of 1 or more, separated by ','"),
    ("", 1, "'': empty; expected at least one gear, e.g. 1,4,8"),
    ("  ", None, "'  ': empty; expected at least one gear, e.g. 224,224;448,448"),
    ("1,16;;4,24", None, "'1,16;;4,24': item 2 is empty; expected whole numbers of 1 or more, ';' between gears"),
    ("1,,16;4,24", None, "'1,,16;4,24': gear 1 '1,,16' has an empty value; expected whole numbers of 1 or more, "
                         "';' between gears"),
    ("0,16;4,24", None, "'0,16;4,24': expected whole numbers from 1 to 2147483647, found '0,16'"),
])
def test_parse_gear_list_refuses_empty_items_and_values_below_1(text: str, width: int | None, expected: str) -> None:
    with pytest.raises(GearError) as refused:
        parse_gear_list(text, option="--opt", width=width)
    assert refused.value.message == f"--opt {expected}"


@pytest.mark.parametrize(("kind", "gears", "expected"), [
    ("batch", ((0,), (1,)), "0,1: gear value 0 in 0; expected whole numbers of 1 or more"),
    ("batch", ((8,), (4,), (1,)), "8,4,1: expected batch sizes in ascending order (1,4,8)"),
    ("batch", ((1,), (4,), (4,)), "1,4,4: gear 4 is given twice; expected distinct gears"),
    ("batch", ((4,),), "4: expected 2 to 100 gears (ATC's range), found 1"),
    ("dims", ((1, 16), (1, 16)), "1,16;1,16: gear 1,16 is given twice; expected distinct gears"),
    ("image_size", ((16, 0), (32, 32)), "16,0;32,32: gear value 0 in 16,0; expected whole numbers of 1 or more"),
])
def test_check_gear_list(kind: str, gears: tuple[tuple[int, ...], ...], expected: str) -> None:
    with pytest.raises(GearError) as refused:
        check_gear_list(kind, gears, "--opt")
    assert refused.value.message == f"--opt {expected}"


def test_dims_gears_are_listed_with_atcs_semicolon() -> None:
    assert DIMS.allowed() == "dims gears 20,20,1,1; 40,40,2,2"
    assert BATCH.allowed() == "batch gears 1, 4, 8"


def test_dataset_json_keeps_its_gear(tmp_path: Path) -> None:
    from binio.manifest import DatasetManifest, load_manifest

    DatasetManifest(root=tmp_path, batch=4, samples=0, inputs=(), gear_kind="batch", gear=(4,)).save()
    assert json.loads((tmp_path / "dataset.json").read_text())["gear"] == {"kind": "batch", "values": [4]}
    read = load_manifest(tmp_path)
    assert (read.gear_kind, read.gear, read.gear_label) == ("batch", (4,), "batch 4")
    DatasetManifest(root=tmp_path, batch=4, samples=0, inputs=()).save()
    assert load_manifest(tmp_path).gear_label == ""


@pytest.mark.parametrize(("change", "expected"), [
    ({"kind": "zoom"},
     "model.json: converted.gears.kind: expected one of batch, image_size, dims, range, found 'zoom'"),
    ({"gears": [4]}, "model.json: converted.gears.gears[0]: expected a list of numbers"),
    ({"gears": [[0]]}, "model.json: converted.gears.gears[0][0]"),
    ({"ranges": [[8, 1]]}, "model.json: converted.gears.ranges[0][1]"),
])
def test_an_edited_gears_entry_is_refused_by_name(change: dict[str, object], expected: str) -> None:
    document = BATCH.to_json() | change
    with pytest.raises(ManifestError) as caught:
        DynamicShape.from_fields(Fields(document, path=Path("model.json"), entry="converted.gears",
                                        error=ManifestError))
    assert caught.value.message.startswith(expected)

"""Dynamic shapes end to end on the stand-in: a fully convolutional CNN (global pooling, so any H,W) frozen with
dims kept unknown, converted with gears, dumped, run and compared per gear; what is no gear is refused at each
stage, naming the option, the value and the gears."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from binio.manifest import load_manifest
from infer.contract import load_contract
from tests.cli import Arg, Outcome, run_cli
from tests.infer.fcn_model import build_fcn


@pytest.fixture(scope="module")
def fcn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fcn(tmp_path_factory.mktemp("fcn"), [(6, 1), (8, 2)], seed=11)


def _ok(outcome: Outcome) -> Outcome:
    assert outcome.code == 0, outcome.err
    return outcome


def _run_and_compare(capsys: pytest.CaptureFixture[str], model: Path, bins: Path, out: Path) -> Outcome:
    _ok(run_cli(capsys, "run", model, "--input", bins, "-o", out, "--backend", "onnxrt"))
    return run_cli(capsys, "compare", model, "--input", bins, "--actual", out)


@pytest.mark.slow
def test_batch_gears_pass_at_4_and_8_and_gear_3_is_refused(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                          tmp_path: Path) -> None:
    model = tmp_path / "model"
    _ok(run_cli(capsys, "freeze", fcn, "-o", model, "--outputs", "probs", "--inputs", "images:0[?,16,16,3]",
                "--batch", "-1"))
    assert load_contract(model).inputs[0].shape == (None, 16, 16, 3)
    converted = _ok(run_cli(capsys, "convert", model, "--target", "onnx", "--precision-mode", "force_fp32",
                            "--dynamic-batch", "1,4,8"))
    assert "dynamic shapes: batch gears 1, 4, 8" in converted.out.splitlines()
    contract = load_contract(model)
    assert contract.gears is not None and contract.gears.batches() == (1, 4, 8)
    assert json.loads((model / "model.json").read_text())["converted"]["gears"]["varying"] == [
        {"tensor": "images:0", "axis": 0}]

    refused = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins_b3", "--source", "images:0=random:0",
                      "--samples", "6", "--batch", "3")
    assert refused.code == 2
    assert refused.error_line == (f"error: --batch 3: not a gear of the model: it takes batch gears 1, 4, 8 "
                                  f"({model / 'model.json'})")
    assert not (tmp_path / "bins_b3").exists()

    for batch in (4, 8):
        bins = tmp_path / f"bins_b{batch}"
        _ok(run_cli(capsys, "dump-bin", "-m", model, "-o", bins, "--source", "images:0=random:0", "--samples", "10",
                    "--batch", str(batch)))
        manifest = load_manifest(bins)
        assert (manifest.gear_kind, manifest.gear, manifest.inputs[0].shape) == ("batch", (batch,),
                                                                                (batch, 16, 16, 3))
        compared = _run_and_compare(capsys, model, bins, tmp_path / f"out_b{batch}")
        assert compared.code == 0, compared.out + compared.err
        assert compared.verdict.startswith("PASSED")

    pairs: list[Arg] = ["--input", tmp_path / "bins_b4", "--actual", tmp_path / "out_b4",
             "--input", tmp_path / "bins_b8", "--actual", tmp_path / "out_b8"]
    across = run_cli(capsys, "compare", model, *pairs, "--report", tmp_path / "report")
    assert across.code == 0, across.out + across.err
    lines = across.out.strip().splitlines()
    assert lines[-1] == "PASSED: 2 gears (batch 4, batch 8)"
    assert "batch 4: PASSED" in lines and "batch 8: PASSED" in lines
    assert (tmp_path / "report" / "b4" / "report.json").is_file() and (tmp_path / "report" / "b8").is_dir()
    # One gear's outputs off (each sample's scores reversed): its verdict short, the reasons below it, the verdict
    # across the gears naming it, and the next step for that gear's own dataset (--layerwise takes one).
    for path in (tmp_path / "out_b8").rglob("*_output_0.bin"):
        scores = np.fromfile(path, dtype=np.float32).reshape(8, -1)
        scores[:, ::-1].tofile(path)
    failed = run_cli(capsys, "compare", model, *pairs)
    assert failed.code == 1
    lines = failed.out.strip().splitlines()
    assert "batch 4: PASSED" in lines
    gear_line = next(line for line in lines if line.startswith("batch 8: FAILED: "))
    assert re.fullmatch(r"batch 8: FAILED: probs:0 RelativeEuclideanDistance \S+ > 0\.05 \(and \d+ more\)",
                        gear_line) and len(gear_line) <= 120, failed.out
    assert any(line.startswith("  limits broken: probs:0 RelativeEuclideanDistance ") and
               "KullbackLeiblerDivergence" in line for line in lines), "\n".join(lines)
    headline = next(line for line in lines if line.startswith("FAILED: 1 of 2 gears: batch 8 (probs:0 "))
    assert lines[lines.index(headline) + 1] == (
        f"next: infer compare {model} --input {tmp_path / 'bins_b8'} --actual {tmp_path / 'out_b8'} --layerwise"
        "   # where the converted model leaves TensorFlow (batch 8)")
    twice = run_cli(capsys, "compare", model, *pairs[:4], *pairs[:4])
    assert twice.error_line == (f"error: --input {tmp_path / 'bins_b4'}: batch 4 again (--input "
                                f"{tmp_path / 'bins_b4'} is that gear too); compare one dataset per gear")


@pytest.mark.slow
def test_two_image_sizes_pass_at_both(capsys: pytest.CaptureFixture[str], fcn: Path, tmp_path: Path) -> None:
    model = tmp_path / "model"
    _ok(run_cli(capsys, "freeze", fcn, "-o", model, "--outputs", "probs", "--inputs", "images:0[2,-1,-1,3]"))
    assert load_contract(model).inputs[0].shape == (2, None, None, 3)
    _ok(run_cli(capsys, "convert", model, "--target", "onnx", "--precision-mode", "force_fp32",
                "--dynamic-image-size", "16,16;24,32"))
    images = tmp_path / "images"
    images.mkdir()
    from PIL import Image

    rng = np.random.default_rng(0)
    for index in range(3):
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(images / f"{index}.png")
    refused = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins_no", images, "--image-size", "20,20")
    assert refused.code == 2
    assert refused.error_line == (f"error: --image-size 20,20: not a gear of the model: it takes image size gears "
                                  f"16x16, 24x32 ({model / 'model.json'})")
    missing = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins_no", images)
    assert missing.error_line == ("error: input images:0: H and W are dynamic; pass --image-size H,W, one of the "
                                  "model's image size gears 16x16, 24x32")
    for height, width in ((16, 16), (24, 32)):
        bins = tmp_path / f"bins_{height}x{width}"
        _ok(run_cli(capsys, "dump-bin", "-m", model, "-o", bins, images, "--image-size", f"{height},{width}"))
        manifest = load_manifest(bins)
        assert (manifest.gear_label, manifest.inputs[0].shape) == (f"image size {height}x{width}",
                                                                   (2, height, width, 3))
        compared = _run_and_compare(capsys, model, bins, tmp_path / f"out_{height}x{width}")
        assert compared.code == 0, compared.out + compared.err
        assert compared.verdict.startswith("PASSED")


@pytest.mark.slow
def test_a_pipeline_with_batch_gears_dumps_runs_and_compares_each(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                                  tmp_path: Path) -> None:
    toml = tmp_path / "pipeline.toml"
    toml.write_text(f"""\
[model]
source = "{fcn}"
outputs = ["probs"]
inputs = ["images:0[?,16,16,3]"]
batch = -1

[data]
source = "random:0"
samples = 6

[convert]
target = "onnx"
precision_mode = "force_fp32"
dynamic_batch = [1, 4, 8]
""")
    outcome = run_cli(capsys, "pipeline", "run", toml)
    assert outcome.code == 0, outcome.out + outcome.err
    stages = [line.split()[0] for line in outcome.out.splitlines() if "@" in line.split(" ")[0]]
    assert stages == [f"{stage}@b{batch}" for stage in ("dump-bin", "run", "compare") for batch in (1, 4, 8)]
    assert "PASSED: 3 gears (batch 1, batch 4, batch 8)" in outcome.out
    lines = outcome.out.splitlines()
    start = lines.index("on an Ascend machine, by hand:") + 2
    by_hand = [line.strip() for line in lines[start:start + 3]]
    for line, batch in zip(by_hand, (1, 4, 8), strict=True):  # one msame line per gear, each on its own bins
        assert line.startswith("msame --model ") and line.endswith(f" --dymBatch {batch}"), line
        assert str(tmp_path / "work" / f"bins_b{batch}") in line
    reports = [line for line in lines if line.startswith("report (batch ")]
    assert [line.split(")")[0] for line in reports] == ["report (batch 1", "report (batch 4", "report (batch 8"]
    assert all(f"report_b{b}" in line for line, b in zip(reports, (1, 4, 8), strict=True))
    for batch in (1, 4, 8):
        manifest = load_manifest(tmp_path / "work" / f"bins_b{batch}")
        assert (manifest.gear, manifest.batch, manifest.samples) == ((batch,), batch, 6)
        assert (tmp_path / "work" / f"report_b{batch}" / "report.json").is_file()
    again = run_cli(capsys, "pipeline", "run", toml)  # nothing changed: every gear's stages skipped
    assert again.code == 0 and again.out.count("(unchanged)") == 12, again.out


def test_a_pipeline_with_a_shape_range_is_refused(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                  tmp_path: Path) -> None:
    toml = tmp_path / "pipeline.toml"
    toml.write_text(f'[model]\nsource = "{fcn}"\noutputs = ["probs"]\n\n[data]\nsource = "random:0"\n\n'
                    '[convert]\nshape_range = "images:1~8,16,16,3"\n')
    outcome = run_cli(capsys, "pipeline", "run", toml)
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {toml}: [convert] shape_range: the pipeline dumps, runs and compares one "
                                  "dataset per gear, and a shape range has none")


@pytest.mark.slow
def test_dims_gears_pass_and_what_is_no_gear_is_refused_at_each_stage(capsys: pytest.CaptureFixture[str],
                                                                     fcn: Path, tmp_path: Path) -> None:
    """--dynamic-dims over batch, H and W: a gear passes; dump-bin refuses another gear's option, a value that is no
    gear, and run refuses bins that are no gear of the model they are fed (re-converted with other gears)."""
    model = tmp_path / "model"
    _ok(run_cli(capsys, "freeze", fcn, "-o", model, "--outputs", "probs", "--inputs", "images:0[-1,-1,-1,3]"))
    _ok(run_cli(capsys, "convert", model, "--target", "onnx", "--precision-mode", "force_fp32",
                "--dynamic-dims", "1,16,16;2,24,32"))
    bins = tmp_path / "bins"
    _ok(run_cli(capsys, "dump-bin", "-m", model, "-o", bins, "--source", "images:0=random:1", "--samples", "4",
                "--dims", "2,24,32"))
    assert load_manifest(bins).inputs[0].shape == (2, 24, 32, 3)
    compared = _run_and_compare(capsys, model, bins, tmp_path / "out")
    assert compared.code == 0, compared.out + compared.err

    def refused(*args: Arg) -> str:
        outcome = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bad", "--source", "images:0=random:1",
                          *args)
        assert outcome.code == 2 and not (tmp_path / "bad").exists()
        return outcome.error_line

    assert refused("--dims", "2,16,16") == (f"error: --dims 2,16,16: not a gear of the model: it takes dims gears "
                                            f"1,16,16; 2,24,32 ({model / 'model.json'})")
    assert refused("--dims", "2,16") == ("error: --dims 2,16: expected 3 values, one per unknown dim (images:0[0], "
                                         "images:0[1], images:0[2])")
    assert refused("--image-size", "16,16") == ("error: --image-size: the model's gears are dims gears 1,16,16; "
                                                "2,24,32 (give --dims instead)")
    assert refused("--dims", "2,24,32", "--batch", "2") == ("error: --batch 2: the model's dims gears decide the "
                                                            "first dim; give it in --dims")

    _ok(run_cli(capsys, "convert", model, "--target", "onnx", "--precision-mode", "force_fp32",
                "--dynamic-dims", "1,16,16;4,24,32"))
    ran = run_cli(capsys, "run", model, "--input", bins, "-o", tmp_path / "out2")
    assert ran.code == 2
    assert ran.error_line == (f"error: {bins / 'dataset.json'}: bins images:0 (2,24,32,3): not a gear of the model, "
                              "which takes dims gears 1,16,16; 4,24,32")


def test_gear_options_on_a_static_model_are_refused(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                    tmp_path: Path) -> None:
    model = tmp_path / "model"
    _ok(run_cli(capsys, "freeze", fcn, "-o", model, "--outputs", "probs", "--inputs", "images:0[2,16,16,3]"))
    converted = run_cli(capsys, "convert", model, "--target", "onnx", "--dynamic-batch", "1,4,8")
    assert converted.error_line == ("error: --dynamic-batch 1,4,8: every input's shape is static (images:0 "
                                    "(2,16,16,3)); ATC would fail with E10031 (a dynamic option needs a -1 dim in "
                                    "--input_shape)")
    _ok(run_cli(capsys, "convert", model, "--target", "onnx"))
    dumped = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bins", "--source", "images:0=random:0",
                     "--image-size", "16,16")
    assert dumped.error_line == (f"error: --image-size: the model has no image size gears ({model / 'model.json'} "
                                 "records none; inputs images:0 (2,16,16,3))")


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--dynamic-batch", "0,1", "'0,1': expected whole numbers from 1 to 2147483647, found '0'"),
    ("--dynamic-batch", "1,0", "'1,0': expected whole numbers from 1 to 2147483647, found '0'"),
    ("--dynamic-batch", "1,,4", "'1,,4': item 2 is empty; expected whole numbers of 1 or more, separated by ','"),
    ("--dynamic-image-size", "16,0;32,32", "'16,0;32,32': expected whole numbers from 1 to 2147483647, found '16,0'"),
    ("--shape-range", "images:1~4,16,16,3;images:2,16,16,3",
     "images:1~4,16,16,3;images:2,16,16,3: input images is given twice; expected one NAME:DIMS per input"),
    ("--shape-range", "images:1~4,16,16,3;images:0:2,16,16,3",
     "images:1~4,16,16,3;images:0:2,16,16,3: input images is given twice (as 'images' and 'images:0'); expected "
     "one NAME:DIMS per input"),
])
def test_a_gear_option_with_a_value_below_1_an_empty_item_or_an_input_twice_is_refused(
        capsys: pytest.CaptureFixture[str], fcn: Path, tmp_path: Path, flag: str, value: str, expected: str) -> None:
    model = tmp_path / "model"
    _ok(run_cli(capsys, "freeze", fcn, "-o", model, "--outputs", "probs", "--inputs", "images:0[?,16,16,3]",
                "--batch", "-1"))
    converted = run_cli(capsys, "convert", model, "--target", "onnx", "--soc-version", "Ascend310P3", flag, value)
    assert converted.code == 2
    assert converted.error_line == f"error: {flag} {expected}"
    assert json.loads((model / "model.json").read_text())["converted"] is None


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("dynamic_batch", "[8, 4, 1]", "8,4,1: expected batch sizes in ascending order (1,4,8)"),
    ("dynamic_batch", "[1, 4, 4]", "1,4,4: gear 4 is given twice; expected distinct gears"),
    ("dynamic_batch", "[4]", "4: expected 2 to 100 gears (ATC's range), found 1"),
    ("dynamic_batch", "[0, 1]", "0,1: gear value 0 in 0; expected whole numbers of 1 or more"),
    ("dynamic_batch", '"1,,4"', "'1,,4': item 2 is empty; expected whole numbers of 1 or more, separated by ','"),
    ("dynamic_image_size", "[[16, 16], [16, 16]]", "16,16;16,16: gear 16,16 is given twice; expected distinct gears"),
    ("dynamic_dims", "[[1, 16, 16]]", "1,16,16: expected 2 to 100 gears (ATC's range), found 1"),
])
def test_a_pipelines_gear_list_is_refused_when_the_file_is_loaded(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                                  tmp_path: Path, key: str, value: str,
                                                                  expected: str) -> None:
    toml = tmp_path / "pipeline.toml"
    toml.write_text(f'[model]\nsource = "{fcn}"\noutputs = ["probs"]\ninputs = ["images:0[?,16,16,3]"]\n'
                    f'batch = -1\n\n[data]\nsource = "random:0"\n\n[convert]\ntarget = "onnx"\n{key} = {value}\n')
    outcome = run_cli(capsys, "pipeline", "run", toml)
    assert outcome.code == 2
    assert outcome.error_line == f"error: {toml}: [convert] {key} {expected}"
    assert not (tmp_path / "work").exists()  # no stage ran: inspect and freeze need no pb for this


def test_freeze_keeps_only_unknown_dims_dynamic(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"
    _ok(run_cli(capsys, "freeze", fcn, "-o", fixed, "--outputs", "probs", "--inputs", "images:0[2,16,16,3]"))
    again = run_cli(capsys, "freeze", fixed / "model.pb", "-o", tmp_path / "again", "--outputs", "probs",
                    "--inputs", "images:0[2,-1,16,3]")
    assert again.error_line == ("error: input images:0: --inputs shape [2,-1,16,3] keeps dim 1 unknown (-1), but "
                                "the graph fixes it to 16 (shape (2,16,16,3))")
    clash = run_cli(capsys, "freeze", fcn, "-o", tmp_path / "clash", "--outputs", "probs", "--inputs",
                    "images:0[-1,16,16,3]", "--batch", "4")
    assert clash.error_line == "error: input images:0: --batch 4 fixes dim 0, which --inputs keeps unknown (-1)"
    kept = run_cli(capsys, "freeze", fcn, "-o", tmp_path / "kept", "--outputs", "probs", "--inputs",
                   "images:0[-1,?,16,3]")
    assert kept.error_line == "error: input images:0: shape (?,?,16,3) still has unknown dims (1)"
    assert "hint: give them in --inputs, e.g. 'images:0[-1,1,16,3]'" in kept.err  # the user's -1 kept


@pytest.mark.slow
def test_a_shape_range_takes_any_shape_inside_it(capsys: pytest.CaptureFixture[str], fcn: Path,
                                                 tmp_path: Path) -> None:
    model = tmp_path / "model"
    _ok(run_cli(capsys, "freeze", fcn, "-o", model, "--outputs", "probs", "--inputs", "images:0[?,16,16,3]",
                "--batch", "-1"))
    assumed = run_cli(capsys, "convert", model, "--target", "onnx", "--shape-range", "images:1~8,16,16,3")
    assert assumed.error_line == ("error: --shape-range images:1~8,16,16,3: ATC has no shape range for Ascend310, "
                                  "the chip assumed without --soc-version (Atlas 200/300/500 inference products)")
    assert "give --soc-version" in assumed.err
    _ok(run_cli(capsys, "convert", model, "--target", "onnx", "--precision-mode", "force_fp32",
                "--soc-version", "Ascend310P3", "--shape-range", "images:1~8,16,16,3"))
    outside = run_cli(capsys, "dump-bin", "-m", model, "-o", tmp_path / "bad", "--source", "images:0=random:0",
                      "--dims", "9")
    assert outside.error_line == ("error: --dims 9: input images:0: dim 0 is 9, outside its range 1~8 (the model's "
                                  "shape ranges images:0[0] 1~8)")
    bins = tmp_path / "bins"
    _ok(run_cli(capsys, "dump-bin", "-m", model, "-o", bins, "--source", "images:0=random:0", "--samples", "7",
                "--dims", "5"))
    assert (load_manifest(bins).gear_kind, load_manifest(bins).inputs[0].shape) == ("range", (5, 16, 16, 3))
    compared = _run_and_compare(capsys, model, bins, tmp_path / "out")
    assert compared.code == 0, compared.out + compared.err

"""dump-bin, run and compare for a model converted with AIPP: uint8 bins of the source size, the declared
preprocessing recorded, TensorFlow fed it, the converted model fed the bins through AIPP."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import read_bin
from binio.manifest import load_manifest
from infer.contract import ModelContract
from infer.dump_bin._sources.images import ImageFolderSource, ImagePreprocessing
from tests.cli import run_cli
from tests.conftest import Copy


def _images(folder: Path, count: int = 3) -> Path:
    from PIL import Image

    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(count):
        Image.fromarray(rng.integers(0, 256, size=(15, 13, 3), dtype=np.uint8)).save(folder / f"img_{i}.png")
    return folder


def _convert(capsys: pytest.CaptureFixture[str], contract: ModelContract, *args: str) -> None:
    outcome = run_cli(capsys, "convert", contract.path, "--target", "onnx", "--precision-mode", "force_fp32",
                      "--aipp", *args)
    assert outcome.code == 0, outcome.err


@pytest.mark.slow
def test_xrgb_bins_are_source_size_uint8_with_the_declared_preprocessing(
        capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path) -> None:
    contract = copy_model(frozen_small_cnn)
    _convert(capsys, contract, "--aipp-input-format", "XRGB8888_U8", "--aipp-src-size", "10,12",
             "--mean", "120,110,100", "--std", "60", "--color", "BGR")
    images = _images(tmp_path / "images")
    outcome = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", images,
                      "--mean", "120,110,100", "--std", "60", "--color", "BGR")
    assert outcome.code == 0, outcome.err
    manifest = load_manifest(tmp_path / "bins")
    item = manifest.inputs[0]
    assert (item.dtype, item.shape) == ("uint8", (2, 12, 10, 4))
    declared = item.preprocessing["declared"]
    assert (declared["source_channels"], declared["color"], declared["mean"], declared["std"]) == (
        "XRGB", "BGR", [120.0, 110.0, 100.0], [60.0])
    assert "mean" not in item.preprocessing and item.preprocessing["channels_in_bins"] == "XRGB"
    first = read_bin(manifest.file_path(item, item.files[0]), item.spec)
    rgb = ImageFolderSource(images, ImagePreprocessing(height=12, width=10)).read(0, 2)
    assert (first[..., 0] == 0).all()  # AIPP's X channel
    np.testing.assert_array_equal(first[..., 1:], rgb)  # the images as they are, resized host-side only

    run = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out")
    assert run.code == 0, run.err
    compared = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "out",
                       "--report", tmp_path / "report")
    assert compared.code == 0, compared.out + compared.err
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["preprocessing"][0]["passed"]
    # TensorFlow saw the declared float preprocessing; AIPP's fp16 output is the only difference left.
    assert report["outputs"][0]["metrics"]["CosineSimilarity"] > 0.9999
    # TensorFlow in shards takes the same uint8 bins through the same declared preprocessing.
    plain = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "tf", "--backend",
                    "tf")
    sharded = run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "tf2",
                      "--backend", "tf", "--shards", "2")
    assert plain.code == 0 and sharded.code == 0, plain.err + sharded.err
    (one,), (two,) = (list((tmp_path / name).glob("*/000001_output_0.bin")) for name in ("tf", "tf2"))
    assert one.read_bytes() == two.read_bytes()


@pytest.mark.slow
def test_compare_names_a_crop_that_is_not_the_declared_centre_crop(
        capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path) -> None:
    contract = copy_model(frozen_small_cnn)
    _convert(capsys, contract, "--aipp-src-size", "10,12", "--aipp-crop", "0,0", "--scale", "0.00392156862745098")
    images = _images(tmp_path / "images")
    assert run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", images,
                   "--scale", "0.00392156862745098").code == 0
    assert run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out").code == 0
    compared = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "out")
    assert compared.code == 1
    verdict = compared.verdict
    assert verdict.startswith("FAILED: preprocessing: AIPP output of images:0 differs")
    assert "crop at load_start_pos (0, 0), the declared centre crop starts at (1, 2)" in verdict


def test_yuv420sp_with_an_unknown_matrix_takes_a_decoders_npy_and_declares_nothing(
        capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, copy_model: Copy, tmp_path: Path) -> None:
    contract = copy_model(frozen_small_cnn)
    hand = tmp_path / "own.cfg"
    hand.write_text("aipp_op {\n aipp_mode: static\n input_format: YUV420SP_U8\n csc_switch: true\n"
                    + "".join(f" matrix_r{r}c{c}: {v}\n" for r, row in enumerate(((300, 0, 400), (300, -90, -200),
                                                                                   (300, 500, 0)))
                              for c, v in enumerate(row)) + " input_bias_1: 128\n input_bias_2: 128\n}\n")
    assert run_cli(capsys, "convert", contract.path, "--target", "onnx", "--aipp-config", hand).code == 0
    outcome = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", _images(tmp_path / "img"))
    assert outcome.code != 0
    assert outcome.error_line.startswith("error: AIPP input format YUV420SP_U8: its CSC matrix is none of jpeg, ")
    assert not (tmp_path / "bins").exists()
    nv12 = np.random.default_rng(1).integers(0, 256, size=(4, 12, 8, 1), dtype=np.uint8)
    np.save(tmp_path / "nv12.npy", nv12)
    written = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "nv12.npy")
    assert written.code == 0, written.err
    assert "declared" not in load_manifest(tmp_path / "bins").inputs[0].preprocessing
    assert run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out").code == 0
    compared = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "out")
    assert compared.code != 0
    assert "(the model's AIPP input) declare no preprocessing" in compared.error_line


@pytest.mark.slow
@pytest.mark.parametrize(("standard", "color"), [("bt601n", "RGB"), ("jpeg", "BGR")])
def test_yuv420sp_bins_encoded_from_images_pass_compare(capsys: pytest.CaptureFixture[str],
                                                        frozen_small_cnn: ModelContract, copy_model: Copy,
                                                        tmp_path: Path, standard: str, color: str) -> None:
    contract = copy_model(frozen_small_cnn)
    # 12x12 around an 8x8 input: the centred crop starts at (2, 2), even as YUV420SP needs, so it is the declared
    # centre crop (an odd centre would be rounded down and compare would name the crop)
    _convert(capsys, contract, "--aipp-input-format", "YUV420SP_U8", "--aipp-csc", standard, "--color", color,
             "--aipp-src-size", "12,12", "--mean", "120", "--std", "60")
    images = _images(tmp_path / "images")
    assert run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", images, "--mean", "120",
                   "--std", "60", "--color", color).code == 0
    item = load_manifest(tmp_path / "bins").inputs[0]
    assert (item.dtype, item.shape) == ("uint8", (2, 18, 12, 1))
    assert item.preprocessing["declared"]["source_channels"] == "NV12"
    assert run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out").code == 0
    compared = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "out",
                       "--report", tmp_path / "report")
    assert compared.code == 0, compared.out + compared.err
    check = json.loads((tmp_path / "report" / "report.json").read_text())["preprocessing"][0]
    # AIPP's integer CSC floors: under one pixel unit (1/60 here) on top of fp16's rounding
    assert check["passed"] and 0 < max(check["max_abs_diff_per_channel"]) < 1 / 60 + check["tolerance"]


def test_yuv_encoding_round_trips_within_the_4_2_0_chroma() -> None:
    from atc_wrap.aipp.config import CSC_MATRICES
    from infer.model_aipp.yuv import rgb_to_yuv420sp, yuv420sp_to_rgb

    flat = np.repeat(np.repeat(np.random.default_rng(2).integers(0, 256, size=(1, 3, 4, 3)), 2, 1), 2, 2)
    rows, bias = CSC_MATRICES["bt709n"]
    for swap in (False, True):
        planes = rgb_to_yuv420sp(flat.astype(np.uint8), rows, bias, swap_uv=swap)
        assert planes.shape == (1, 9, 8, 1)
        back = yuv420sp_to_rgb(planes, rows, bias, swap_uv=swap)
        assert np.abs(back - np.clip(flat, 0, 255)).max() < 2.5  # uint8 rounding of Y, U, V only: 2x2-flat image


@pytest.mark.slow
def test_yuv420sp_odd_centre_crop_is_rounded_down_and_named(capsys: pytest.CaptureFixture[str],
                                                            frozen_small_cnn: ModelContract, copy_model: Copy,
                                                            tmp_path: Path) -> None:
    contract = copy_model(frozen_small_cnn)
    _convert(capsys, contract, "--aipp-input-format", "YUV420SP_U8", "--aipp-src-size", "10,12")
    images = _images(tmp_path / "img")
    assert run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", images).code == 0
    assert run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out").code == 0
    compared = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", tmp_path / "out")
    assert compared.code == 1
    assert "crop at load_start_pos (0, 2), the declared centre crop starts at (1, 2)" in compared.out


def test_nchw_model_takes_nhwc_uint8_bins_and_compare_passes(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    """An NCHW model input: AIPP and the bins stay NHWC uint8 (as ATC forces for an AIPP input), the stand-in
    transposes AIPP's output and TensorFlow gets the declared preprocessing in NCHW; per-channel means tell a
    channel or layout mix-up apart."""
    from dataclasses import replace
    from typing import Any

    from tests.builders.frozen import write_frozen

    def build(tf: Any) -> None:
        x = tf.compat.v1.placeholder(tf.float32, [2, 3, 6, 8], name="x")
        tf.reduce_mean(x, axis=[2, 3], name="out")

    contract = write_frozen(tmp_path / "model", build, ("x:0",), ("out:0",))
    contract = replace(contract, inputs=(replace(contract.inputs[0], layout="NCHW"),)).save()
    prep = ("--mean", "120,110,100", "--std", "60,50,40", "--color", "BGR")
    _convert(capsys, contract, "--aipp-src-size", "10,8", *prep)
    images = _images(tmp_path / "images", count=4)
    assert run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", images, *prep).code == 0
    item = load_manifest(tmp_path / "bins").inputs[0]
    assert (item.dtype, item.shape, item.spec.layout) == ("uint8", (2, 8, 10, 3), "NHWC")
    assert run_cli(capsys, "run", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "out").code == 0
    actual = next((tmp_path / "out").iterdir())
    outcome = run_cli(capsys, "compare", contract.path, "--input", tmp_path / "bins", "--actual", actual)
    assert outcome.code == 0, outcome.out + outcome.err
    assert "preprocessing: AIPP output of x:0 matches the declared preprocessing" in outcome.out

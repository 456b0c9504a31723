"""`infer dump-bin`: real sources to bins in the model's dtype, and every refusal with its exact error line."""

from __future__ import annotations

import errno
import itertools
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from binio.binfile import read_bin
from binio.dataset import iter_samples, open_dataset
from binio.manifest import load_manifest
from infer.contract import ModelContract
from infer.dump_bin._dump import DumpOptions, dump_bins
from infer.dump_bin._sources.images import ImagePreprocessing, decode_image
from tests.cli import Arg, run_cli
from tests.conftest import Copy
from tests.infer.dump_models import fp16_model, two_input_model


def _leftovers(root: Path) -> list[Path]:
    """Temporary files anywhere under `root`: what an interrupted or refused write must never leave."""
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def _images(folder: Path, count: int, size: tuple[int, int] = (12, 10)) -> list[np.ndarray]:
    """Saves `count` seeded RGB images, cycling PNG, BMP and JPEG, named out of order on purpose."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    pixels = []
    for index in range(count):
        array = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        suffix = (".png", ".bmp", ".jpg")[index % 3]
        Image.fromarray(array).save(folder / f"img_{count - index:03d}{suffix}")
        pixels.append(array)
    return pixels


# --- what it writes -------------------------------------------------------------------------------------------


def test_npy_to_bins_in_the_models_dtype(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                         tmp_path: Path) -> None:
    data = np.random.default_rng(0).normal(size=(5, 8, 8, 3))  # float64, the usual np.random output
    np.save(tmp_path / "data.npy", data)
    out = tmp_path / "bins"
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, tmp_path / "data.npy")
    assert result.code == 0, result.err
    assert result.out.splitlines()[0] == (f"wrote 3 batch file(s) of 2 per input: 5 samples, 1 padding row(s), "
                                          f"to {out}")
    assert result.out.splitlines()[1].startswith(f"  images:0  float32(2,8,8,3)  images/  <- {tmp_path / 'data.npy'}"
                                                 "  (cast float64 -> float32, largest error ")
    manifest = open_dataset(out, verify=True)
    (item,) = manifest.inputs
    assert (manifest.batch, manifest.samples, manifest.padding) == (2, 5, 1)
    assert manifest.model_sha256 == frozen_small_cnn.pb_sha256
    assert (item.tensor, item.folder, item.dtype, item.shape, item.layout) == \
        ("images:0", "images", "float32", (2, 8, 8, 3), "NHWC")
    assert [(f.name, f.rows) for f in item.files] == [("000000.bin", 2), ("000001.bin", 2), ("000002.bin", 1)]
    assert sorted(p.name for p in (out / "images").iterdir()) == ["000000.bin", "000001.bin", "000002.bin"]
    last = read_bin(out / "images" / "000002.bin", item.spec)
    np.testing.assert_array_equal(last[0], data[4].astype(np.float32))
    assert not last[1].any()  # the padding row is zeros
    assert item.preprocessing["cast"]["from"] == "float64" and item.preprocessing["padding"] == "zeros"
    assert item.source == str(tmp_path / "data.npy")


def test_converted_model_taking_float16_gets_float16_bins(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    contract = fp16_model(tmp_path / "model")
    data = np.random.default_rng(1).random((4, 8, 8, 3), dtype=np.float32)
    np.save(tmp_path / "data.npy", data)
    result = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", "--dtype", "float16",
                     tmp_path / "data.npy")
    assert result.code == 0, result.err
    manifest = load_manifest(tmp_path / "bins")
    assert manifest.inputs[0].dtype == "float16"
    assert manifest.model_sha256 == contract.converted.sha256 if contract.converted else False
    assert (tmp_path / "bins" / "images" / "000000.bin").stat().st_size == 2 * 8 * 8 * 3 * 2
    back = np.concatenate(list(iter_samples(manifest, "images:0")))
    np.testing.assert_array_equal(back, data.astype(np.float16))
    assert "cast float32 -> float16, largest error" in result.out


def test_lone_npz_feeds_every_input_by_name_with_integer_casts(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    ids = np.arange(12).reshape(3, 4)  # int64, as numpy makes them
    mask = np.ones((3, 4))
    np.savez(tmp_path / "data.npz", ids=ids, mask=mask)
    result = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "data.npz")
    assert result.code == 0, result.err
    manifest = open_dataset(tmp_path / "bins", verify=True)
    assert [(i.folder, i.dtype) for i in manifest.inputs] == [("ids", "int32"), ("mask", "float32")]
    np.testing.assert_array_equal(np.concatenate(list(iter_samples(manifest, "ids:0"))), ids.astype(np.int32))
    assert manifest.inputs[0].source == f"{tmp_path / 'data.npz'}[ids]"


def test_generators_fill_an_input_as_long_as_the_others(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    np.save(tmp_path / "ids.npy", np.arange(20, dtype=np.int32).reshape(5, 4))
    out = tmp_path / "bins"
    result = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", out, "--source", "ids=" + str(tmp_path / "ids.npy"),
                     "--source", "mask:0=const:1")
    assert result.code == 0, result.err
    manifest = load_manifest(out)
    mask = np.concatenate(list(iter_samples(manifest, "mask:0")))
    assert mask.shape == (5, 4) and (mask == 1).all()
    assert manifest.input("mask:0").preprocessing["generator"] == "const"


def test_dump_bin_takes_no_input_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--input names a dataset folder in the commands that read one (run, compare); dump-bin writes one, from
    --source NAME=SOURCE (its spelling before 0.1.0 was --input, never released)."""
    contract = two_input_model(tmp_path / "model")
    outcome = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", "-i", "ids=random:1")
    assert outcome.code == 2
    assert outcome.err.splitlines()[0] == "error: infer dump-bin: No such option: -i"
    assert not (tmp_path / "bins").exists()


def test_random_generator_is_reproducible_whatever_the_batch(tmp_path: Path) -> None:
    def dump(batch: int, name: str) -> np.ndarray:
        contract = two_input_model(tmp_path / name, batch=batch)
        options = DumpOptions(output=tmp_path / f"bins_{name}", sources=(("ids", "random:7"), ("mask", "random:8")),
                              samples=6)
        manifest = dump_bins(contract, options).manifest
        return np.concatenate(list(iter_samples(manifest, "mask:0")))

    first, second = dump(2, "b2"), dump(4, "b4")
    assert first.shape == (6, 4) and first.min() >= 0 and first.max() < 1
    np.testing.assert_array_equal(first, second)


def test_image_folder_with_resize_crop_and_normalisation(
        capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    _images(tmp_path / "images", 5)
    out = tmp_path / "bins"
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, tmp_path / "images",
                     "--resize", "9", "--scale", "0.00392156862745098", "--mean", "0.5", "--std", "0.25",
                     "--color", "BGR")
    assert result.code == 0, result.err
    manifest = load_manifest(out)
    item = manifest.inputs[0]
    names = ["img_001.bmp", "img_002.png", "img_003.jpg", "img_004.bmp", "img_005.png"]
    assert item.preprocessing["files"] == names
    assert {k: item.preprocessing[k] for k in ("resize", "color", "scale", "mean", "std", "layout", "crop")} == {
        "resize": 9, "color": "BGR", "scale": 0.00392156862745098, "mean": [0.5], "std": [0.25], "layout": "NHWC",
        "crop": "centre"}
    samples = np.concatenate(list(iter_samples(manifest, "images:0")))
    # The same pipeline written out by hand with Pillow, for the third file.
    from PIL import Image

    with Image.open(tmp_path / "images" / names[2]) as image:
        resized = image.convert("RGB").resize((11, 9), Image.Resampling.BILINEAR)  # 12x10 -> shorter side 9
    pixels = np.asarray(resized, dtype=np.float32)[0:8, 1:9, ::-1]
    expected = (pixels * np.float32(0.00392156862745098) - np.float32(0.5)) / np.float32(0.25)
    np.testing.assert_allclose(samples[2], expected, rtol=1e-6, atol=1e-6)


def test_image_folder_is_read_in_natural_order_and_the_order_recorded(frozen_small_cnn: ModelContract,
                                                                      tmp_path: Path) -> None:
    """img_2.png before img_10.png, folder by folder (set_2 before set_10), as a folder of bare bins is read."""
    from PIL import Image

    from infer.dump_bin._sources.order import NATURAL_ORDER

    names = ["set_2/img_1.png", "set_2/img_2.png", "set_2/img_10.png", "set_10/img_1.png", "set_10/img_3.png"]
    for index, name in enumerate(names):
        (tmp_path / "images" / name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((8, 8, 3), index * 40, np.uint8)).save(tmp_path / "images" / name)
    manifest = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "bins",
                                                       sources=(("", str(tmp_path / "images")),))).manifest
    item = manifest.inputs[0]
    assert item.preprocessing["files"] == names and item.preprocessing["order"] == NATURAL_ORDER
    samples = np.concatenate(list(iter_samples(manifest, "images:0")))
    assert [int(sample[0, 0, 0]) for sample in samples] == [0, 40, 80, 120, 160]


@pytest.mark.slow
def test_image_workers_give_the_same_bins_as_one_process(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    _images(tmp_path / "images", 11)
    sources = (("", str(tmp_path / "images")),)
    serial = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "one", sources=sources))
    parallel = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "two", sources=sources, workers=2))
    assert [f.digest for f in serial.manifest.inputs[0].files] == [f.digest for f in parallel.manifest.inputs[0].files]
    assert serial.manifest.samples == 11


def test_nchw_layout_transposes_images(tmp_path: Path) -> None:
    from infer.dump_bin._sources.images import ImageFolderSource

    _images(tmp_path / "images", 1)
    nhwc = ImagePreprocessing(height=8, width=8)
    nchw = ImagePreprocessing(height=8, width=8, layout="NCHW")
    (path,) = ImageFolderSource(tmp_path / "images", nhwc).files
    np.testing.assert_array_equal(decode_image(path, nchw), decode_image(path, nhwc).transpose(2, 0, 1))


@pytest.mark.slow
def test_workers_send_uint8_crops_and_the_batch_is_normalised_as_each_image_would_be(tmp_path: Path) -> None:
    """Workers return the uint8 crop; the parent's whole-batch arithmetic gives, bit for bit, what one image's
    float32 arithmetic gives (scale, per-channel mean and std, BGR, NCHW)."""
    from PIL import Image

    from infer.dump_bin._sources.images import ImageFolderSource, _decode_task

    _images(tmp_path / "images", 11, size=(20, 14))
    prep = ImagePreprocessing(height=8, width=8, color="BGR", scale=1 / 255, mean=(0.485, 0.456, 0.406),
                              std=(0.229, 0.224, 0.225), layout="NCHW")
    source = ImageFolderSource(tmp_path / "images", prep, workers=2)
    try:
        found = np.concatenate([source.read(0, 6), source.read(6, 11)])
    finally:
        source.close()
    crops, error = _decode_task([str(p) for p in source.files[:4]], prep)
    assert error is None and crops is not None and crops.dtype == np.uint8 and crops.shape == (4, 8, 8, 3)
    expected = []
    for path in source.files:
        with Image.open(path) as opened:
            image = opened.convert("RGB")
        scale = 8 / min(image.size)
        size = (max(8, round(image.size[0] * scale)), max(8, round(image.size[1] * scale)))
        image = image.resize(size, Image.Resampling.BILINEAR)
        left, top = (size[0] - 8) // 2, (size[1] - 8) // 2
        pixels: np.ndarray = np.asarray(image.crop((left, top, left + 8, top + 8)), dtype=np.float32)[:, :, ::-1]
        pixels = (pixels * np.float32(1 / 255) - np.asarray(prep.mean, np.float32)) / np.asarray(prep.std, np.float32)
        expected.append(pixels.transpose(2, 0, 1))
    assert found.dtype == np.float32
    assert found.tobytes() == np.stack(expected).tobytes()


def test_a_bin_dataset_is_rebatched_for_another_batch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = np.arange(7 * 4, dtype=np.int32).reshape(7, 4)
    np.savez(tmp_path / "data.npz", ids=data, mask=data.astype(np.float32))
    first = two_input_model(tmp_path / "b2", batch=2)
    second = two_input_model(tmp_path / "b3", batch=3)
    assert run_cli(capsys, "dump-bin", "-m", first.path, "-o", tmp_path / "bins2", tmp_path / "data.npz").code == 0
    result = run_cli(capsys, "dump-bin", "-m", second.path, "-o", tmp_path / "bins3", tmp_path / "bins2")
    assert result.code == 0, result.err
    manifest = open_dataset(tmp_path / "bins3", verify=True)
    assert (manifest.batch, manifest.file_count, manifest.padding) == (3, 3, 2)
    np.testing.assert_array_equal(np.concatenate(list(iter_samples(manifest, "ids:0"))), data)


def test_a_folder_of_bare_bins_is_read_in_the_models_dtype(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    data = np.random.default_rng(2).random((3, 8, 8, 3), dtype=np.float32)
    (tmp_path / "raw").mkdir()
    data[:2].tofile(tmp_path / "raw" / "a.bin")
    data[2:].tofile(tmp_path / "raw" / "b.bin")
    result = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "bins", sources=(("", str(tmp_path / "raw")),)))
    np.testing.assert_array_equal(np.concatenate(list(iter_samples(result.manifest, "images:0"))), data)


def test_bare_bins_numbered_without_padding_are_read_in_number_order(frozen_small_cnn: ModelContract,
                                                                    tmp_path: Path) -> None:
    data = np.random.default_rng(4).random((11, 8, 8, 3), dtype=np.float32)
    (tmp_path / "raw").mkdir()
    for index in range(11):  # 0.bin ... 10.bin, as a tofile() loop names them
        data[index:index + 1].tofile(tmp_path / "raw" / f"{index}.bin")
    result = dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "bins", sources=(("", str(tmp_path / "raw")),)))
    np.testing.assert_array_equal(np.concatenate(list(iter_samples(result.manifest, "images:0"))), data)
    assert result.manifest.inputs[0].preprocessing["file_names"][:3] == ["0.bin", "1.bin", "2.bin"]


def test_rerun_with_force_keeps_files_whose_sha_matches(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.ones((6, 8, 8, 3), np.float32))
    options = DumpOptions(output=tmp_path / "bins", sources=(("", str(tmp_path / "data.npy")),), force=True)
    first = dump_bins(frozen_small_cnn, options)
    assert (first.files_written, first.files_kept) == (3, 0)
    damaged = tmp_path / "bins" / "images" / "000001.bin"
    damaged.write_bytes(bytes(damaged.stat().st_size))
    images = tmp_path / "bins" / "images"
    (images / "000009.bin").write_bytes(b"stale")  # from an earlier, longer dump
    (images / ".000010.bin").write_bytes(b"stale")  # hidden: run's preflight would refuse it as a stray bin
    (images / "000011.bin").mkdir()  # a folder so named is not a bin, and is not removed (nor a traceback)
    second = dump_bins(frozen_small_cnn, options)
    assert (second.files_written, second.files_kept) == (1, 2)
    assert not (images / "000009.bin").exists() and not (images / ".000010.bin").exists()
    assert (images / "000011.bin").is_dir() and (images / "000000.bin").is_file()
    (images / "000011.bin").rmdir()
    open_dataset(tmp_path / "bins", verify=True)


def test_progress_reports_every_batch(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((7, 8, 8, 3), np.float32))
    seen: list[tuple[int, int]] = []
    dump_bins(frozen_small_cnn, DumpOptions(output=tmp_path / "bins", sources=(("", str(tmp_path / "data.npy")),)),
              progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


def test_allow_lossy_writes_and_reports_the_loss(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = fp16_model(tmp_path / "model")
    data = np.zeros((2, 8, 8, 3), np.float32)
    data[0, 0, 0, 0] = 1e5
    np.save(tmp_path / "data.npy", data)
    result = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", "--allow-lossy",
                     tmp_path / "data.npy")
    assert result.code == 0, result.err
    assert "  !! images:0: 1 overflow float16 (|x| > 65504) written (--allow-lossy)" in result.out.splitlines()
    assert load_manifest(tmp_path / "bins").inputs[0].preprocessing["cast"]["overflow"] == 1


# --- refusals: the exact error line, and nothing half-written ----------------------------------------------------


def _refused(capsys: pytest.CaptureFixture[str], out: Path, *args: Arg) -> str:
    result = run_cli(capsys, "dump-bin", "-o", out, *args)
    assert result.code == 2, result.err
    assert not out.exists(), f"{out} was left behind"
    assert not _leftovers(out.parent)
    return result.error_line


def test_dtype_other_than_the_models_is_refused_with_the_way_out(capsys: pytest.CaptureFixture[str],
                                                                 frozen_small_cnn: ModelContract,
                                                                 tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((2, 8, 8, 3), np.float32))
    result = run_cli(capsys, "dump-bin", "-o", tmp_path / "bins", "-m", frozen_small_cnn.path, "--dtype", "fp16",
                     tmp_path / "data.npy")
    assert result.code == 2
    assert result.error_line == "error: --dtype float16 differs from the model's input images:0, which takes float32"
    assert (f"hint: bins must be what the model takes: for float16 there, convert with `infer convert "
            f"{frozen_small_cnn.path} --input-fp16-nodes images`") in result.err
    assert not (tmp_path / "bins").exists()


def test_sample_shape_other_than_the_models_is_refused(capsys: pytest.CaptureFixture[str],
                                                       frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((4, 8, 8, 4), np.float32))
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "data.npy")
    assert line == (f"error: {tmp_path / 'data.npy'}: samples of shape (8,8,4) for input images:0, but the model "
                    f"takes (8,8,3) per sample (batch shape (2,8,8,3))")


def test_inputs_with_different_sample_counts_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    np.save(tmp_path / "ids.npy", np.zeros((5, 4), np.int32))
    np.save(tmp_path / "mask.npy", np.zeros((4, 4), np.float32))
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, "--source", f"ids={tmp_path / 'ids.npy'}",
                    "--source", f"mask={tmp_path / 'mask.npy'}")
    assert line == (f"error: inputs differ in sample count: ids:0 has 5 ({tmp_path / 'ids.npy'}), "
                    f"mask:0 has 4 ({tmp_path / 'mask.npy'})")


def test_npz_without_the_inputs_key_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    np.savez(tmp_path / "data.npz", ids=np.zeros((2, 4)), attention=np.zeros((2, 4)))
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, tmp_path / "data.npz")
    assert line == (f"error: {tmp_path / 'data.npz'}: no array for input mask:0 (looked for 'mask'); "
                    f"its keys are: ids, attention")


def test_an_unreadable_image_is_refused_by_name(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                                tmp_path: Path) -> None:
    _images(tmp_path / "images", 3)
    bad = tmp_path / "images" / "img_002.bmp"
    bad.write_bytes(b"not an image at all")
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "images")
    assert line == f"error: {bad}: cannot decode image (cannot identify image file '{bad}')"


@pytest.mark.slow
def test_a_truncated_image_is_refused_by_name(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                              tmp_path: Path) -> None:
    _images(tmp_path / "images", 6, size=(64, 64))
    jpeg = tmp_path / "images" / "img_004.jpg"
    jpeg.write_bytes(jpeg.read_bytes()[:400])
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "images", "--workers", "2")
    assert line == f"error: {jpeg}: cannot decode image (Truncated File Read)"  # Pillow's words


@pytest.mark.parametrize(("value", "loss"), [(1e5, "1 overflow float16 (|x| > 65504)"), (np.nan, "1 NaN")])
def test_fp16_overflow_and_nan_are_refused_without_allow_lossy(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                               value: float, loss: str) -> None:
    contract = fp16_model(tmp_path / "model")
    data = np.zeros((6, 8, 8, 3), np.float32)
    data[3, 1, 2, 0] = value
    np.save(tmp_path / "data.npy", data)
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, tmp_path / "data.npy")
    assert line == f"error: input images:0: {loss} casting float32 to float16 in images/000001.bin (samples 2..3)"


def test_a_truncated_existing_bin_is_refused(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                             tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((4, 8, 8, 3), np.float32))
    assert run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "old",
                   tmp_path / "data.npy").code == 0
    truncated = tmp_path / "old" / "images" / "000001.bin"
    truncated.write_bytes(truncated.read_bytes()[:1000])
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "old")
    assert line == f"error: {truncated}: expected 1536 bytes for shape (2,8,8,3) float32, got 1000"


def test_a_changed_bin_of_a_dataset_is_refused_when_rebatched(capsys: pytest.CaptureFixture[str],
                                                              frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((4, 8, 8, 3), np.float32))
    assert run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "old",
                   tmp_path / "data.npy").code == 0
    changed = tmp_path / "old" / "images" / "000001.bin"
    changed.write_bytes(bytes(range(256)) * (changed.stat().st_size // 256))  # same size, other bytes
    for source in (tmp_path / "old", tmp_path / "old" / "images"):  # the dataset, or one of its input folders
        line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, source)
        assert line == f"error: {changed}: xxh128 differs from dataset.json's (the file changed after dump-bin)"


def test_an_existing_output_is_refused_without_force(capsys: pytest.CaptureFixture[str],
                                                     frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((2, 8, 8, 3), np.float32))
    out = tmp_path / "bins"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", out, tmp_path / "data.npy")
    assert result.code == 2
    assert result.error_line == f"error: {out}: exists already"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_pickled_npy_is_never_loaded(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                       tmp_path: Path) -> None:
    objects = np.empty(2, dtype=object)
    objects[:] = [np.zeros((8, 8, 3)), np.zeros((8, 8, 3))]
    np.save(tmp_path / "data.npy", objects, allow_pickle=True)
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "data.npy")
    assert line == (f"error: {tmp_path / 'data.npy'}: holds pickled Python objects, which are never loaded "
                    f"(allow_pickle=False)")


def test_no_space_left_is_a_clean_error(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np.save(tmp_path / "data.npy", np.zeros((6, 8, 8, 3), np.float32))
    calls: list[int] = []

    def disk_full(handle: BinaryIO, buffer: np.ndarray) -> None:
        calls.append(1)
        if len(calls) == 2:
            handle.write(b"half")  # what a real full disk leaves: part of the file
            raise OSError(errno.ENOSPC, "No space left on device")
        handle.write(buffer.tobytes())

    monkeypatch.setattr("infer.dump_bin._dump._write_payload", disk_full)
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "data.npy")
    assert line == f"error: {tmp_path / 'bins' / 'images' / '000001.bin'}: no space left on the device while writing"


def test_interrupted_run_into_an_existing_folder_keeps_whole_files_only(
        frozen_small_cnn: ModelContract, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    np.save(tmp_path / "data.npy", np.ones((6, 8, 8, 3), np.float32))
    out = tmp_path / "bins"
    options = DumpOptions(output=out, sources=(("", str(tmp_path / "data.npy")),), force=True)
    dump_bins(frozen_small_cnn, options)
    real_write = __import__("infer.dump_bin._dump", fromlist=["_write_payload"])._write_payload
    calls: list[int] = []

    def interrupted(handle: BinaryIO, buffer: np.ndarray) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        real_write(handle, buffer)

    monkeypatch.setattr("infer.dump_bin._dump._write_payload", interrupted)
    np.save(tmp_path / "data.npy", np.full((6, 8, 8, 3), 2, np.float32))
    with pytest.raises(KeyboardInterrupt):
        dump_bins(frozen_small_cnn, options)
    assert not (out / "dataset.json").exists()  # not a dataset until a run completes
    assert not _leftovers(out)
    for path in (out / "images").iterdir():
        assert path.stat().st_size == 2 * 8 * 8 * 3 * 4
    monkeypatch.undo()
    # The interrupted write was file 0's; file 1 may have been written by then (the writer thread races the
    # interrupt), file 2 was not. Exactly the files already holding the new bytes are kept, the others written.
    new_bytes = np.full((2, 8, 8, 3), 2, np.float32).tobytes()
    fresh = [path.name for path in sorted((out / "images").iterdir()) if path.read_bytes() == new_bytes]
    assert fresh in ([], ["000001.bin"])
    resumed = dump_bins(frozen_small_cnn, options)
    assert (resumed.files_written, resumed.files_kept) == (3 - len(fresh), len(fresh))
    assert xxhash.xxh3_128((out / "images" / "000000.bin").read_bytes()).hexdigest() == \
        resumed.manifest.inputs[0].files[0].digest


def test_a_dynamic_batch_needs_batch_and_a_static_one_refuses_another(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    from binio.spec import TensorSpec
    from tests.infer.dump_models import hand_contract

    dynamic = hand_contract(tmp_path / "dynamic", (TensorSpec("x:0", "float32", (None, 3)),))
    np.save(tmp_path / "x.npy", np.zeros((5, 3), np.float32))
    line = _refused(capsys, tmp_path / "bins", "-m", dynamic.path, tmp_path / "x.npy")
    assert line == "error: input x:0: the batch dimension is dynamic (?,3): pass --batch N"
    result = run_cli(capsys, "dump-bin", "-m", dynamic.path, "-o", tmp_path / "bins", tmp_path / "x.npy",
                     "--batch", "4")
    assert result.code == 0, result.err
    assert load_manifest(tmp_path / "bins").inputs[0].shape == (4, 3)
    static = two_input_model(tmp_path / "static")
    line = _refused(capsys, tmp_path / "bins2", "-m", static.path, "--batch", "4", "--source", "ids=random:1",
                    "--source", "mask=random:2")
    assert line == "error: --batch 4 differs from the model's batch 2 (input ids:0 has shape (2,4))"


def test_a_lone_npy_for_a_two_input_model_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    np.save(tmp_path / "x.npy", np.zeros((2, 4), np.float32))
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, tmp_path / "x.npy")
    assert line == (f"error: {tmp_path / 'x.npy'}: the model has 2 inputs (ids:0, mask:0); name a source for each "
                    f"with --source NAME=SOURCE")


def test_a_layout_other_than_the_models_is_refused(capsys: pytest.CaptureFixture[str],
                                                   frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    _images(tmp_path / "images", 2)
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "images", "--layout", "NCHW")
    assert line == "error: --layout NCHW differs from the model's input images:0, which is NHWC"


def test_a_refused_run_into_an_empty_folder_leaves_it_empty(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    contract = fp16_model(tmp_path / "model")
    np.save(tmp_path / "data.npy", np.full((4, 8, 8, 3), np.inf, np.float32))
    out = tmp_path / "bins"
    out.mkdir()
    result = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", out, tmp_path / "data.npy")
    assert result.error_line.startswith("error: input images:0: 384 inf casting float32 to float16")
    assert list(out.iterdir()) == []


def test_a_bad_generator_names_what_it_expected(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, "--source", "ids=const:1.5",
                    "--source", "mask=random:x")
    assert line == "error: source 'const:1.5': expected an integer (the input is int32) after 'const:', found '1.5'"


def test_image_options_and_an_unknown_dtype_are_refused_by_option(capsys: pytest.CaptureFixture[str],
                                                                  frozen_small_cnn: ModelContract,
                                                                  tmp_path: Path) -> None:
    _images(tmp_path / "images", 2)
    for resize in ("0", "7"):
        line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "images", "--resize", resize)
        assert line == (f"error: --resize {resize}: the shorter side would be smaller than the 8x8 centre crop input "
                        "images:0 takes")
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "images", "--dtype", "f32x")
    assert line.startswith("error: --dtype 'f32x': unknown dtype: expected one of float16, float32,")


def test_an_image_folder_for_a_non_image_input_names_the_folder(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    contract = two_input_model(tmp_path / "model")
    _images(tmp_path / "images", 2)
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, "--source", f"ids={tmp_path / 'images'}",
                    "--source", "mask=const:1")
    assert line == (f"error: {tmp_path / 'images'}: a folder of images for input ids:0, which is not an image input: "
                    "images need a 4-D input (N,H,W,C or N,C,H,W), its samples have shape (4)")


@pytest.mark.parametrize(("array", "found"), [
    (np.full((2, 8, 8, 3), "a"), "dtype <U1 is not a tensor dtype (numbers or bool expected)"),
    (np.zeros((2, 8, 8, 3), np.complex64), "dtype complex64 is not a tensor dtype (numbers or bool expected)"),
    (np.float32(3), "a scalar, expected an array of samples (samples first)"),
])
def test_an_npy_that_holds_no_samples_is_refused(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                                 tmp_path: Path, array: np.ndarray, found: str) -> None:
    np.save(tmp_path / "data.npy", array)
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "data.npy")
    assert line == f"error: {tmp_path / 'data.npy'}: {found}"


@pytest.mark.parametrize(("name", "content", "found"), [
    ("data.npy", b"", "not a .npy file: it is an empty file"),
    ("data.npy", b"images,labels\n", "not a .npy file: it is other data (its first bytes are b'images')"),
    ("data.npy", b"PK\x03\x04rest", "not a .npy file: it is an .npz (zip) archive"),
    ("data.npz", b"\x93NUMPYrest", "not a .npz file: it is a .npy array"),
    ("data.npz", b"", "not a .npz file: it is an empty file"),
])
def test_a_file_that_is_not_what_its_suffix_says_is_named(capsys: pytest.CaptureFixture[str],
                                                          frozen_small_cnn: ModelContract, tmp_path: Path,
                                                          name: str, content: bytes, found: str) -> None:
    (tmp_path / name).write_bytes(content)
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / name)
    assert line == f"error: {tmp_path / name}: {found}"


def test_a_raw_pickle_named_npy_is_never_loaded(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                                tmp_path: Path) -> None:
    import pickle

    (tmp_path / "data.npy").write_bytes(pickle.dumps([1, 2, 3]))
    line = _refused(capsys, tmp_path / "bins", "-m", frozen_small_cnn.path, tmp_path / "data.npy")
    assert line == (f"error: {tmp_path / 'data.npy'}: holds pickled Python objects, which are never loaded "
                    f"(allow_pickle=False)")


def test_an_output_under_a_file_is_refused(capsys: pytest.CaptureFixture[str], frozen_small_cnn: ModelContract,
                                           tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((2, 8, 8, 3), np.float32))
    line = _refused(capsys, tmp_path / "data.npy" / "bins", "-m", frozen_small_cnn.path, tmp_path / "data.npy")
    assert line == f"error: {tmp_path / 'data.npy' / 'bins'}: cannot create the output folder here (Not a directory)"


def test_input_names_become_safe_distinct_folders(tmp_path: Path) -> None:
    from binio.spec import TensorSpec
    from tests.infer.dump_models import hand_contract

    contract = hand_contract(tmp_path / "model", (TensorSpec("scope/x:0", "float32", (2, 3)),
                                                  TensorSpec("scope_x:0", "float32", (2, 3))))
    result = dump_bins(contract, DumpOptions(output=tmp_path / "bins", sources=(("scope/x", "const:1"),
                                                                                ("scope_x", "const:2"))))
    assert [(i.tensor, i.folder) for i in result.manifest.inputs] == [("scope/x:0", "00_scope_x"),
                                                                      ("scope_x:0", "01_scope_x")]
    assert sorted(p.name for p in (tmp_path / "bins").iterdir()) == ["00_scope_x", "01_scope_x", "dataset.json"]
    assert (np.concatenate(list(iter_samples(result.manifest, "scope_x:0"))) == 2).all()


def test_each_option_mistake_is_one_line_naming_the_option(capsys: pytest.CaptureFixture[str],
                                                           frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    two = two_input_model(tmp_path / "two")
    cnn = frozen_small_cnn.path
    np.save(tmp_path / "data.npy", np.zeros((3, 8, 8, 3), np.float32))
    data = str(tmp_path / "data.npy")
    _images(tmp_path / "images", 2)
    images = str(tmp_path / "images")
    (tmp_path / "a-file").write_text("not a folder")
    cases: list[tuple[tuple[Arg, ...], str]] = [
        (("-m", cnn), "no source: give SOURCE or --source NAME=SOURCE"),
        (("-m", cnn, "--source", "images"), "--source images: expected NAME=SOURCE (e.g. --source images:0=data.npy)"),
        (("-m", cnn, "--source", f"labels={data}"),
         f"--source labels={data}: the model has no input 'labels'; its inputs are: images:0"),
        (("-m", two.path, "--source", "ids=const:1", "--source", "ids:0=const:2"),
         "--source ids:0: given twice (const:1, const:2)"),
        (("-m", two.path, "--source", "ids=const:1"),
         "no source for input mask:0: pass --source NAME=SOURCE for each input"),
        (("-m", cnn, data, "--samples", "4"), "--samples 4: the sources hold only 3"),
        (("-m", cnn, data, "--samples", "0"), "--samples 0: expected 1 or more"),
        (("-m", cnn, data, "--workers", "0"), "--workers 0: expected 1 or more"),
        (("-m", cnn, images, "--color", "BRG"), "--color BRG: expected RGB or BGR"),
        (("-m", cnn, images, "--mean", "1,2"), "--mean 1,2: expected 1 value or 3 (one per channel), found 2"),
        (("-m", cnn, images, "--mean", "a,b"),
         "--mean a,b: expected numbers separated by commas (e.g. 123.7,116.3,103.5)"),
        (("-m", cnn, images, "--std", "0"), "--std 0: expected numbers more than 0 (a standard deviation), one or one "
                                            "per channel"),
        (("-m", cnn, images, "--std", "-1"), "--std -1: expected numbers more than 0 (a standard deviation), one or "
                                             "one per channel"),
        (("-m", cnn, images, "--resize", "100000"), "--resize 100000: expected at most 9459 (the shorter side in "
                                                    "pixels: a square image resized to it is already Pillow's limit "
                                                    "of pixels)"),
        (("-m", cnn, images, "--layout", "HWC"), "--layout HWC: expected NHWC or NCHW"),
    ]
    for args, expected in cases:
        assert _refused(capsys, tmp_path / "bins", *args) == f"error: {expected}", args
    result = run_cli(capsys, "dump-bin", "-o", tmp_path / "a-file", "-m", cnn, data)
    assert (result.code, result.error_line) == (2, f"error: {tmp_path / 'a-file'}: exists and is not a folder")
    result = run_cli(capsys, "dump-bin", "-o", tmp_path, "-m", cnn, images, "--force")
    assert result.error_line == f"error: {images}: the source lies inside the output folder {tmp_path}"
    assert len(list((tmp_path / "images").iterdir())) == 2


def test_images_for_a_model_without_a_recorded_layout_need_the_right_layout(capsys: pytest.CaptureFixture[str],
                                                                           tmp_path: Path) -> None:
    from binio.spec import TensorSpec
    from tests.infer.dump_models import hand_contract

    contract = hand_contract(tmp_path / "model", (TensorSpec("pixels:0", "float32", (2, 3, 8, 8)),))  # layout ND
    _images(tmp_path / "images", 3)
    line = _refused(capsys, tmp_path / "bins", "-m", contract.path, tmp_path / "images")
    assert line == (f"error: {tmp_path / 'images'}: images give 1 or 3 channels, input pixels:0 takes 8 (layout NHWC, "
                    "sample shape (3,8,8))")
    result = run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "images",
                     "--layout", "NCHW")
    assert result.code == 0, result.err
    item = load_manifest(tmp_path / "bins").inputs[0]
    assert (item.layout, item.shape, item.preprocessing["layout"]) == ("NCHW", (2, 3, 8, 8), "NCHW")


def test_a_dataset_without_the_input_is_refused_naming_what_it_holds(capsys: pytest.CaptureFixture[str],
                                                                     frozen_small_cnn: ModelContract,
                                                                     tmp_path: Path) -> None:
    np.save(tmp_path / "data.npy", np.zeros((2, 8, 8, 3), np.float32))
    assert run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, "-o", tmp_path / "cnn_bins",
                   tmp_path / "data.npy").code == 0
    two = two_input_model(tmp_path / "two")
    line = _refused(capsys, tmp_path / "bins", "-m", two.path, "--source", f"ids={tmp_path / 'cnn_bins'}",
                    "--source", "mask=const:1")
    assert line == f"error: {tmp_path / 'cnn_bins' / 'dataset.json'}: no input 'ids:0'; it holds: images:0"


def test_a_contract_whose_pb_changed_is_refused_and_leaves_nothing(copy_model: Copy, frozen_small_cnn: ModelContract,
                                                                   tmp_path: Path) -> None:
    """The library refuses it too (the pipeline calls dump_bins directly): bins record the model's sha256. The pb
    is hashed beside the dump, which stops once the hash is known to differ, not at the end."""
    from infer.contract import ContractError

    contract = copy_model(frozen_small_cnn)
    contract.pb_path.write_bytes(contract.pb_path.read_bytes() + b"\n")
    written: list[int] = []
    with pytest.raises(ContractError, match=r"model\.pb changed since freeze \(sha256 differs from the contract's\)"):
        dump_bins(contract, DumpOptions(output=tmp_path / "bins", sources=(("", "random:0"),), samples=2 * 400),
                  progress=lambda done, total: written.append(done))
    assert not (tmp_path / "bins").exists()
    assert max(written) < 400  # batches of 2: the hash of a small pb is known long before the last


def test_a_stale_contract_leaves_a_dataset_already_there_untouched(copy_model: Copy, frozen_small_cnn: ModelContract,
                                                                   tmp_path: Path) -> None:
    """The pb is hashed beside the dump; --force over a dataset waits for it before the old manifest goes."""
    from infer.contract import ContractError

    contract = copy_model(frozen_small_cnn)
    dump_bins(contract, DumpOptions(output=tmp_path / "bins", sources=(("", "random:0"),), samples=4))
    before = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "bins").rglob("*") if p.is_file()}
    contract.pb_path.write_bytes(contract.pb_path.read_bytes() + b"\n")
    with pytest.raises(ContractError, match=r"model\.pb changed since freeze"):
        dump_bins(contract, DumpOptions(output=tmp_path / "bins", sources=(("", "random:1"),), samples=4, force=True))
    after = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "bins").rglob("*") if p.is_file()}
    assert after == before and Path("bins/dataset.json") in after


def test_an_image_folder_lists_what_rglob_finds_in_natural_order(tmp_path: Path) -> None:
    """The listing walks the folder with os.scandir and keeps names as text (a folder of 50,000 images is no 50,000
    Paths): it must find what ``rglob`` and ``is_file`` find, hidden files and folders out, a link to a file in, a
    link to a folder not entered, in natural order of the relative path, folder by folder."""
    from infer.dump_bin._sources.images import IMAGE_SUFFIXES, list_image_names, list_images
    from infer.dump_bin._sources.order import natural_key

    root = tmp_path / "images"
    for name in ("img_10.png", "img_2.PNG", "img_1.jpeg", "a.", ".hidden.png", "notes.txt", "b.bmp.txt", "x.Jpg",
                 "sub/3.png", "sub/10.png", "sub/deeper/1.bmp", "sub2/1.png", ".cache/1.png", "sub10/0.png"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    (root / "dir.png").mkdir()
    (root / "to_file.png").symlink_to(root / "img_10.png")
    (root / "to_folder").symlink_to(root / "sub", target_is_directory=True)
    (root / "dangling.png").symlink_to(root / "missing.png")

    def parts_key(path: Path) -> tuple[tuple[tuple[int, int | str], ...], ...]:
        return tuple(natural_key(part) for part in path.relative_to(root).parts)

    expected = sorted((p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(root).parts)), key=parts_key)
    assert list_images(root) == expected
    assert list_image_names(root) == [p.relative_to(root).as_posix() for p in expected]
    assert list_image_names(root)[:3] == ["img_1.jpeg", "img_2.PNG", "img_10.png"]


@pytest.mark.parametrize("odd", ["", "img_\x01.png"])
def test_images_equal_in_natural_order_come_in_the_order_of_their_names(tmp_path: Path, odd: str) -> None:
    """img_1.png, img_01.png and img_001.png are one number: their order is their text's, whatever order the file
    system lists them in (a name holding U+0001, sorted by the tuple key, the same)."""
    from infer.dump_bin._sources.images import list_image_names

    for name in ("img_1.png", "img_2.png", "img_01.png", "img_001.png", *([odd] if odd else [])):
        (tmp_path / name).write_bytes(b"")
    assert list(list_image_names(tmp_path))[:4] == ["img_001.png", "img_01.png", "img_1.png", "img_2.png"]


@pytest.mark.slow
@given(st.lists(st.lists(st.text("ab0123456789²._-", min_size=1, max_size=6), min_size=1, max_size=3),
                max_size=20))
def test_the_flat_path_key_orders_as_the_parts_keys_do(paths: list[list[str]]) -> None:
    """natural_path_key (one flat tuple, held for every image of a folder while it is sorted) orders relative paths
    exactly as the tuple of their parts' natural_key does; digits int() refuses ("²") are text, not a traceback."""
    from infer.dump_bin._sources.order import natural_key, natural_path_key

    names = ["/".join(parts) for parts in paths]
    nested = sorted(names, key=lambda name: tuple(natural_key(part) for part in name.split("/")))
    assert sorted(names, key=natural_path_key) == nested
    for first, second in itertools.pairwise(nested):
        assert (natural_path_key(first) < natural_path_key(second)) == (
            tuple(natural_key(p) for p in first.split("/")) < tuple(natural_key(p) for p in second.split("/")))


@pytest.mark.slow
@given(st.lists(st.lists(st.text("aZ0123456789²٣._- \x01\x7f\u00e9\U0001f600", min_size=1, max_size=6), min_size=1,
                         max_size=3), max_size=20))
def test_the_text_key_orders_as_the_path_key_does(paths: list[list[str]]) -> None:
    """natural_text_key (one short string per image, held for a whole folder while it is sorted) gives the order of
    natural_path_key, ties included, for every list of names orders_as_text accepts; names it refuses (a U+0001)
    are sorted by the tuple key instead (list_image_names)."""
    from infer.dump_bin._sources.order import (
        named_by,
        natural_path_key,
        natural_sort_text,
        natural_text_key,
        orders_as_text,
    )

    names = ["/".join(parts) for parts in paths]
    if not orders_as_text(names):
        assert any("\x01" in name for name in names)
        return
    assert sorted(names, key=natural_text_key) == sorted(names, key=natural_path_key)
    # with the name in it, sorted alone: a folder's names (each once) in that order, ties by their text
    assert [named_by(text) for text in sorted(map(natural_sort_text, set(names)))] == sorted(
        set(names), key=lambda name: (natural_path_key(name), name))
    for first, second in itertools.pairwise(names):
        assert (natural_text_key(first) < natural_text_key(second)) == (
            natural_path_key(first) < natural_path_key(second))
        assert (natural_text_key(first) == natural_text_key(second)) == (
            natural_path_key(first) == natural_path_key(second))

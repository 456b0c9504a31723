"""compare --actual DIR where DIR is what msame, ais_bench or the ModelZoo ACL benchmark wrote on the server: their
folder and file names, .bin, .txt and .npy, each output read with the om's dtype and shape, and the verdict line
naming the tool, the om's chip (from the om) and, for values an fp16 computation gave, the fp16 grid."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from infer.contract import ModelContract, load_contract
from infer.convert import ConvertOptions, convert_model
from infer.run import RunOptions, run_model
from tests.cli import Outcome, run_cli
from tests.infer.om_files import OmPlan, write_om

TS_MSAME, TS_AIS = "2024111_9_5_7_123", "2024_01_01-12_00_00"
Writer = Callable[[Path, dict[str, np.ndarray]], Path]  # (root, source stem -> output) -> what --actual names


@pytest.fixture(scope="module")
def setup(frozen_small_cnn: ModelContract, tmp_path_factory: pytest.TempPathFactory,
          ) -> tuple[ModelContract, Path, dict[str, np.ndarray]]:
    """The small CNN with an om recorded by --use-om, a dataset dump-bin made from two bare bins (cat.bin, dog.bin:
    one batch each), and what the om would give for them: TensorFlow's outputs rounded to fp16."""
    root = tmp_path_factory.mktemp("tool_layouts")
    shutil.copytree(frozen_small_cnn.folder, root / "model")
    contract = load_contract(root / "model" / "model.json")
    om = write_om(root / "server" / "model.om", OmPlan(list(contract.inputs), list(contract.outputs)))
    contract = convert_model(contract, ConvertOptions(use_om=om)).contract
    rng = np.random.default_rng(5)
    (root / "src").mkdir()
    for name in ("cat", "dog"):
        rng.standard_normal((2, 8, 8, 3)).astype(np.float32).tofile(root / "src" / f"{name}.bin")
    from infer.dump_bin import DumpOptions, dump_bins

    dump_bins(contract, DumpOptions(output=root / "bins", sources=(("", str(root / "src")),)))
    golden = run_model(replace(contract, converted=None), root / "bins", root / "tf", RunOptions(backend="tf")).folder
    expected = {name: np.fromfile(golden / f"{stem}_output_0.bin", np.float32).astype(np.float16).astype(np.float32)
                for name, stem in (("cat", "000000"), ("dog", "000001"))}
    return contract, root / "bins", expected


def _stems(outputs: dict[str, np.ndarray], by: str) -> dict[str, np.ndarray]:
    return outputs if by == "source" else {"000000": outputs["cat"], "000001": outputs["dog"]}


def msame_txt(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    for stem, values in _stems(outputs, "dataset").items():
        folder = root / "out" / TS_MSAME
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{stem}_output_0.txt").write_text(" ".join(repr(float(v)) for v in values) + " \n")
    return root / "out"


def msame_on_the_users_files(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    for stem, values in _stems(outputs, "source").items():
        (root / "out" / TS_MSAME).mkdir(parents=True, exist_ok=True)
        values.tofile(root / "out" / TS_MSAME / f"{stem}_output_0.bin")
    return root / "out" / TS_MSAME


def _ais(root: Path, outputs: dict[str, np.ndarray], ext: str, devices: bool = False) -> Path:
    folder = root / "out" / TS_AIS
    for index, (stem, values) in enumerate(_stems(outputs, "dataset").items()):
        where = folder / f"device{index}_{index}" if devices else folder
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"{stem}_0.{ext}"
        if ext == "npy":
            np.save(path, values.reshape(2, 5))
        elif ext == "txt":
            np.savetxt(path, values.reshape(2, 5))
        else:
            values.tofile(path)
    (root / "out" / f"{TS_AIS}_summary.json").write_text(json.dumps({"NPU_compute_time": {"mean": 1.0}}))
    return root / "out"


def ais_bench_bin(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    return _ais(root, outputs, "bin")


def ais_bench_npy(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    return _ais(root, outputs, "npy")


def ais_bench_txt(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    return _ais(root, outputs, "txt")


def msit_on_two_devices(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    return _ais(root, outputs, "npy", devices=True)


def modelzoo_benchmark(root: Path, outputs: dict[str, np.ndarray]) -> Path:
    (root / "results" / "VAE").mkdir(parents=True)
    for stem, values in _stems(outputs, "source").items():
        values.tofile(root / "results" / "VAE" / f"{stem}_output0.bin")
    return root / "results"


def _compare(capsys: pytest.CaptureFixture[str], contract: ModelContract, bins: Path, actual: Path) -> Outcome:
    return run_cli(capsys, "compare", contract.path, "--input", bins, "--actual", actual,
                   "--no-expected-from-emulation")


@pytest.mark.slow
@pytest.mark.parametrize(("write", "tool"), [
    (msame_txt, "msame"), (msame_on_the_users_files, "msame"), (ais_bench_bin, "ais_bench"),
    (ais_bench_npy, "ais_bench"), (ais_bench_txt, "ais_bench"), (msit_on_two_devices, "ais_bench"),
    (modelzoo_benchmark, "ModelZoo benchmark"),
])
def test_each_tools_own_layout_is_read_with_the_oms_dtype_and_named_in_the_verdict(
        setup: tuple[ModelContract, Path, dict[str, np.ndarray]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], write: Writer, tool: str) -> None:
    contract, bins, outputs = setup
    outcome = _compare(capsys, contract, bins, write(tmp_path, outputs))
    assert outcome.code == 0, outcome.err + outcome.out
    line = outcome.verdict
    assert contract.converted is not None
    assert line.startswith("PASSED | golden: tensorflow model.pb")
    assert f"| actual: {tool} model.om on Ascend310 (from the om) force_fp16 ({contract.converted.sha256[:8]}, no " \
           "run.json) |" in line
    assert line.endswith("| actual values on the fp16 grid: every value of probs:0 equals its float16 rounding")


def test_values_off_the_fp16_grid_are_not_said_to_be_on_it(setup: tuple[ModelContract, Path, dict[str, np.ndarray]],
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    nudged = {stem: values + np.float32(1e-6) for stem, values in outputs.items()}
    outcome = _compare(capsys, contract, bins, ais_bench_bin(tmp_path, nudged))
    assert outcome.code == 0, outcome.err
    assert "fp16 grid" not in outcome.out


def test_a_one_batch_dataset_takes_the_one_input_msame_named_after_the_om(
        setup: tuple[ModelContract, Path, dict[str, np.ndarray]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    from infer.dump_bin import DumpOptions, dump_bins

    (tmp_path / "one").mkdir()
    shutil.copyfile(bins / "images" / "000000.bin", tmp_path / "one" / "x.bin")
    dump_bins(contract, DumpOptions(output=tmp_path / "bins", sources=(("", str(tmp_path / "one")),)))
    (tmp_path / "out" / TS_MSAME).mkdir(parents=True)
    outputs["cat"].tofile(tmp_path / "out" / TS_MSAME / "model_output_0.bin")  # msame --input x.bin: the om's stem
    outcome = _compare(capsys, contract, tmp_path / "bins", tmp_path / "out")
    assert outcome.code == 0, outcome.err
    assert "actual: msame model.om on Ascend310 (from the om)" in outcome.out


def test_a_text_output_of_another_size_is_refused_naming_the_file(
        setup: tuple[ModelContract, Path, dict[str, np.ndarray]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    actual = msame_txt(tmp_path, outputs)
    bad = actual / TS_MSAME / "000001_output_0.txt"
    bad.write_text("1.0 2.0 3.0\n")
    assert _compare(capsys, contract, bins, actual).error_line == (
        f"error: {bad}: 3 values, expected 10 for output probs:0 (2,5) float32")


def test_an_npy_of_another_dtype_than_the_oms_is_refused(setup: tuple[ModelContract, Path, dict[str, np.ndarray]],
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    actual = ais_bench_npy(tmp_path, outputs)
    bad = actual / TS_AIS / "000000_0.npy"
    np.save(bad, outputs["cat"].astype(np.float16).reshape(2, 5))
    assert _compare(capsys, contract, bins, actual).error_line == (
        f"error: {bad}: holds float16, the om's output probs:0 is float32")


def test_a_bin_of_another_size_is_refused_naming_the_tools_file(
        setup: tuple[ModelContract, Path, dict[str, np.ndarray]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    actual = modelzoo_benchmark(tmp_path, outputs)
    bad = actual / "VAE" / "dog_output0.bin"
    outputs["dog"].astype(np.float64).tofile(bad)
    assert _compare(capsys, contract, bins, actual).error_line == (
        f"error: {bad}: expected 40 bytes for shape (2,5) float32, got 80 (is it float64?)")


def test_outputs_of_other_inputs_and_two_candidate_folders_are_refused(
        setup: tuple[ModelContract, Path, dict[str, np.ndarray]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    folder = tmp_path / "out" / TS_AIS
    folder.mkdir(parents=True)
    outputs["cat"].tofile(folder / "bird_0.bin")
    assert _compare(capsys, contract, bins, tmp_path / "out").error_line == (
        f"error: --actual {folder}: ais_bench outputs of bird, none for the dataset's batch 000000")
    for name in ("a", "b"):
        (tmp_path / "results" / name).mkdir(parents=True)
        outputs["cat"].tofile(tmp_path / "results" / name / "cat_output0.bin")
    assert _compare(capsys, contract, bins, tmp_path / "results").error_line == (
        f"error: --actual {tmp_path / 'results'}: output files in 2 folders (a, b): expected one")


def test_a_tools_folder_is_compared_with_a_given_golden_folder_too(
        setup: tuple[ModelContract, Path, dict[str, np.ndarray]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins, outputs = setup
    outcome = run_cli(capsys, "compare", contract.path, "--input", bins, "--actual", ais_bench_npy(tmp_path, outputs),
                      "--golden", bins.parent / "tf", "--no-expected-from-emulation")
    assert outcome.code == 0, outcome.err
    line = outcome.verdict
    assert "| golden: tensorflow model.pb" in line and "| actual: ais_bench model.om on Ascend310 (from the om)" in line

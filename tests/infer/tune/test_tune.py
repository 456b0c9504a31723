"""`infer tune-precision` end to end: real conversions, ONNX Runtime runs and comparisons with TensorFlow.

Models: the overflow model (sqrt(reduce_sum(square(x))) / 16 with |x| near 300, x*x past 65504), a small CNN with
that energy term over its conv outputs (each square fits fp16, their sum does not), a small CNN whose
log(y*y + 1e-9) underflows in fp16 after a conv, and that CNN with a damaged weight in the pb it converts (golden
outputs from the intact one), which no choice of fp32 ops can fix.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from infer.compare._compare import CompareOptions, compare
from infer.contract import ModelContract, load_contract
from infer.convert._convert import ConvertOptions, convert_model
from infer.run import run_model
from infer.run.options import RunOptions
from tests.builders.bins import write_bins
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_cnn_energy, build_energy, build_underflow
from tests.cli import run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def overflow(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, Path]:
    folder = tmp_path_factory.mktemp("overflow")
    contract = write_frozen(folder / "model", build_energy, ("x:0",), ("energy:0",))
    return contract, write_bins(folder / "bins", "x:0", (2, 64), files=3, uniform=(250, 350))


@pytest.fixture(scope="module")
def cnn_energy(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, Path]:
    folder = tmp_path_factory.mktemp("cnn_energy")
    contract = write_frozen(folder / "model", build_cnn_energy, ("x:0",), ("out:0",))
    return contract, write_bins(folder / "bins", "x:0", (2, 8, 8, 3), files=3, uniform=(-1, 1))


@pytest.fixture(scope="module")
def underflow(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, Path]:
    folder = tmp_path_factory.mktemp("underflow")
    contract = write_frozen(folder / "model", build_underflow, ("x:0",), ("probs:0",))
    return contract, write_bins(folder / "bins", "x:0", (2, 8, 8, 3), files=3, uniform=(-1, 1))


def _copy(contract: ModelContract, folder: Path) -> ModelContract:
    shutil.copytree(contract.folder, folder)
    return load_contract(folder / "model.json")


def _passes_with(contract: ModelContract, bins: Path, keep: tuple[str, ...], work: Path) -> bool:
    """The whole dataset through the stand-in converted with exactly these ops kept in fp32."""
    copy = _copy(contract, work / "model")
    keep_file = work / "keep.cfg"
    keep_file.write_text("".join(f"{op}\n" for op in keep))
    converted = convert_model(copy, ConvertOptions(target="onnx", keep_dtype=keep_file)).contract
    actual = run_model(converted.path, bins, work / "out", RunOptions(backend="onnxrt")).folder
    return compare(converted.path, bins, actual).passed


def _tf_tensors(contract: ModelContract, bins: Path, names: tuple[str, ...]) -> list[np.ndarray]:
    """These tensors of the pb in TensorFlow over every bin of the dataset, concatenated over the batches."""
    import tensorflow as tf

    from binio.manifest import load_manifest
    from ckpt2pb.protobuf import read_graph_def

    spec = load_manifest(bins).inputs[0]
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(read_graph_def(contract.pb_path), name="")
    with tf.compat.v1.Session(graph=graph) as session:
        runs = [session.run(list(names), {spec.tensor: np.fromfile(bins / spec.folder / entry.name, np.float32)
                                          .reshape(spec.shape)}) for entry in spec.files]
    return [np.concatenate([run[index] for run in runs]) for index in range(len(names))]


def _check_found(model: tuple[ModelContract, Path], expected: list[str], tmp_path: Path,
                 capsys: pytest.CaptureFixture[str], *extra: str) -> None:
    contract, bins = model
    copy = _copy(contract, tmp_path / "user")
    tuned = tmp_path / "tuned"
    outcome = run_cli(capsys, "tune-precision", copy.path, "--input", bins, "-o", tuned, *extra)
    assert outcome.code == 0, outcome.out + outcome.err
    assert (tuned / "keep_dtype.cfg").read_text().splitlines() == expected
    lines = outcome.out.splitlines()
    tunable = json.loads((tuned / "tune.json").read_text())["tunable_ops"]
    assert lines[0].startswith("before: FAILED: ")
    assert lines[0].count("; ") <= 1, lines[0]  # the short line: the cause and one reason, not every reason
    assert lines[1] == f"kept in fp32 ({len(expected)} of {tunable} ops):"
    assert [line.split()[0] for line in lines[2:2 + len(expected)]] == expected
    assert all("of FLOPs" in line and "of parameters" in line for line in lines[2:3 + len(expected)])
    assert "after: PASSED" in lines and lines[-1] == "FOUND"
    assert "candidate 1 (baseline, whole): 0 ops in fp32 -> FAILED" in outcome.err  # progress, as it goes
    report = json.loads((tuned / "tune.json").read_text())
    assert report["found"] and report["keep_dtype"] == expected
    assert report["verdict_before"].startswith("FAILED") and report["verdict_after"] == "PASSED"
    assert report["candidates_tried"] == len(report["candidates"]) >= 3
    for candidate in report["candidates"]:
        assert set(candidate) >= {"ops", "stage", "passed", "verdict", "metrics", "seconds"}
        assert candidate["verdict"].startswith("PASSED" if candidate["passed"] else "FAILED")
    keep = (tuned / "keep_dtype.cfg").resolve()
    command = (tuned / "atc_command.txt").read_text()
    assert command.startswith("atc --model=") and f"--keep_dtype={keep}" in command
    assert "--precision_mode=force_fp16" in command
    handed = load_contract(tuned / "model" / "model.json")
    assert handed.converted is not None
    assert [r["node"] for r in handed.converted.settings["emulation"]["per_op"]] == expected
    assert not (tuned / ".tune-work").exists()
    # The user's own commands with the file found: convert --keep-dtype, run and compare pass on the whole dataset.
    outcome = run_cli(capsys, "convert", copy.path, "--target", "onnx", "--keep-dtype", tuned / "keep_dtype.cfg")
    assert outcome.code == 0, outcome.err
    outcome = run_cli(capsys, "run", copy.path, "--input", bins, "-o", tmp_path / "out")
    assert outcome.code == 0, outcome.err
    actual = next((tmp_path / "out").iterdir())
    outcome = run_cli(capsys, "compare", copy.path, "--input", bins, "--actual", actual)
    assert outcome.code == 0 and outcome.verdict.startswith("PASSED"), outcome.out
    # Dropping any one op from the set fails.
    for index, dropped in enumerate(expected):
        fewer = tuple(op for op in expected if op != dropped)
        assert not _passes_with(contract, bins, fewer, tmp_path / f"drop{index}"), f"passes without {dropped}"


def test_overflow_finds_the_ops_carrying_values_past_65504(overflow: tuple[ModelContract, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # Square makes x*x > 65504, Sum adds 64 of them, Sqrt reads the sum: each would read or store an fp16 inf.
    _check_found(overflow, ["Square", "total", "Sqrt"], tmp_path, capsys, "--samples", "2")
    report = json.loads((tmp_path / "tuned" / "tune.json").read_text())
    assert {c["dataset"] for c in report["candidates"]} == {"subset", "whole"}
    final = [c for c in report["candidates"] if c["stage"] == "final"]
    assert len(final) == 1 and final[0]["dataset"] == "whole" and final[0]["passed"]


def test_cnn_energy_finds_the_sum_past_65504_and_the_op_reading_it(cnn_energy: tuple[ModelContract, Path],
                                                                    tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # Each square fits fp16, so Square may stay fp16; their sum (100000 or more) does not: the Sum must compute
    # and store in fp32, and so must the Sqrt reading it (its input would be cast to an fp16 inf). The conv, the
    # head and the division after the Sqrt (values near 20) need no fp32.
    contract, bins = cnn_energy
    squares, totals = _tf_tensors(contract, bins, ("square:0", "total:0"))
    assert squares.max() < 65504 < totals.min()  # the situation: only the sum passes fp16's range
    _check_found(cnn_energy, ["total", "sqrt"], tmp_path, capsys)


def test_underflow_finds_the_square_the_shift_and_the_log(underflow: tuple[ModelContract, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # y*y and 1e-9 flush to 0 in fp16, and log(0) = -inf; the conv before and the layers after need no fp32.
    _check_found(underflow, ["square", "shifted", "log"], tmp_path, capsys, "--mode", "linear")
    report = json.loads((tmp_path / "tuned" / "tune.json").read_text())
    assert report["mode"] == "linear" and report["suspects"][0] == {"op": "square", "tensor": "square:0",
                                                                    "why": "first diverging"}


def test_a_damaged_weight_is_not_fp16s_failure(underflow: tuple[ModelContract, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from binio.binfile import sha256_file
    from ckpt2pb.protobuf import read_graph_def

    contract, bins = underflow
    golden = run_model(contract.path, bins, tmp_path / "golden", RunOptions(backend="tf")).folder
    damaged = _copy(contract, tmp_path / "damaged")
    graph_def = read_graph_def(damaged.pb_path)
    weights = next(node for node in graph_def.node if node.name == "head/weights")
    from tensorflow import make_ndarray, make_tensor_proto

    values = make_ndarray(weights.attr["value"].tensor)
    weights.attr["value"].tensor.CopyFrom(make_tensor_proto(-3 * values[::-1]))
    damaged.pb_path.write_bytes(graph_def.SerializeToString())
    damaged = replace(damaged, pb_sha256=sha256_file(damaged.pb_path)).save()
    # On Ascend310 (the chip assumed) Conv2D has no fp32 kernel (its op_select_format): fp16 cannot be ruled out
    outcome = run_cli(capsys, "tune-precision", damaged.path, "--input", bins, "--golden", golden, "-o",
                      tmp_path / "tuned310")
    assert outcome.code == 1, outcome.out + outcome.err
    assert "and 2 ops in fp16 have no fp32 kernel there (conv (Conv2D), conv2 (Conv2D))" in outcome.out.splitlines()[-1]
    # A chip whose Conv2D has fp32 (the fixpipe chips) keeps all 9: the failure is shown not to be fp16's
    outcome = run_cli(capsys, "tune-precision", damaged.path, "--input", bins, "--golden", golden, "-o",
                      tmp_path / "tuned", "--soc-version", "Ascend910B2")
    assert outcome.code == 1, outcome.out + outcome.err
    assert outcome.out.splitlines()[-1] == (
        "NOT FOUND: no set of fp32 ops passes: even with every one of the 9 float ops kept in fp32 compare fails, "
        "so the failure is not fp16's (look for a damaged weight, a wrong input or a conversion error: compare "
        "--layerwise)")
    report = json.loads((tmp_path / "tuned" / "tune.json").read_text())
    assert not report["found"] and [c["stage"] for c in report["candidates"]] == ["baseline", "every op in fp32"]
    assert not (tmp_path / "tuned" / "keep_dtype.cfg").exists()


def test_a_set_larger_than_max_ops_is_not_found(overflow: tuple[ModelContract, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = overflow
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", bins, "-o", tmp_path / "tuned",
                      "--max-ops", "2")
    assert outcome.code == 1
    assert outcome.out.splitlines()[-1] == ("NOT FOUND: the smallest set found keeps 3 ops in fp32, more than "
                                            "--max-ops 2")
    assert json.loads((tmp_path / "tuned" / "tune.json").read_text())["keep_dtype"] == ["Square", "total", "Sqrt"]


@pytest.mark.parametrize(("args", "error"), [
    (("--mode", "random"), "error: --mode random: expected one of bisect, linear"),
    (("--precision-mode", "force_fp32"), "error: --precision-mode force_fp32: keep_dtype changes nothing in this "
                                         "mode; expected one of force_fp16, allow_fp32_to_fp16, allow_mix_precision"),
    (("--samples", "0"), "error: --samples 0: expected 1 or more"),
])
def test_bad_options_are_refused(overflow: tuple[ModelContract, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str], args: tuple[str, ...], error: str) -> None:
    contract, bins = overflow
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", bins, "-o", tmp_path / "tuned", *args)
    assert outcome.code == 2 and outcome.error_line == error
    assert not (tmp_path / "tuned").exists()


def test_an_output_that_is_a_file_is_refused(overflow: tuple[ModelContract, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = overflow
    (tmp_path / "tuned").write_text("mine")
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", bins, "-o", tmp_path / "tuned")
    assert outcome.code == 2
    assert outcome.error_line == f"error: -o {tmp_path / 'tuned'}: is a file; expected a folder to write into"
    assert (tmp_path / "tuned").read_text() == "mine"


def test_an_earlier_result_is_kept_without_force(overflow: tuple[ModelContract, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = overflow
    (tmp_path / "tuned").mkdir()
    (tmp_path / "tuned" / "tune.json").write_text("{}")
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", bins, "-o", tmp_path / "tuned")
    assert outcome.code == 2
    earlier = tmp_path / "tuned" / "tune.json"
    assert outcome.error_line == f"error: {earlier}: exists already (an earlier tune-precision)"
    assert earlier.read_text() == "{}" and [p.name for p in earlier.parent.iterdir()] == ["tune.json"]


def test_force_never_replaces_an_earlier_result_through_a_link_out(overflow: tuple[ModelContract, Path],
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    contract, bins = overflow
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep_dtype.cfg").write_text("mine\n")
    tuned = tmp_path / "tuned"
    tuned.mkdir()
    (tuned / "tune.json").write_text("{}")
    (tuned / "model").symlink_to(precious)
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", bins, "-o", tuned, "--force")
    assert outcome.code == 2
    assert outcome.error_line.startswith(f"error: {tuned / 'model'}: a link to {precious.resolve()}, outside")
    assert (precious / "keep_dtype.cfg").read_text() == "mine\n" and (tuned / "model").is_symlink()


def test_the_expected_band_replays_the_keep_dtype_file(overflow: tuple[ModelContract, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """compare's emulated precision converts with the same keep_dtype file (recorded in model.json): without it the
    emulation overflows and every ratio to it is NaN, flagged."""
    contract, bins = overflow
    copy = _copy(contract, tmp_path / "user")
    keep = tmp_path / "keep.cfg"
    keep.write_text("Square\ntotal\nSqrt\n")
    converted = convert_model(copy, ConvertOptions(target="onnx", keep_dtype=keep)).contract
    assert converted.converted is not None
    assert converted.converted.settings["op_control_files"] == {"keep_dtype": "Square\ntotal\nSqrt\n"}
    keep.unlink()  # replayed from model.json's record, not from the file
    actual = run_model(converted.path, bins, tmp_path / "out", RunOptions(backend="onnxrt")).folder
    outcome = run_cli(capsys, "compare", converted.path, "--input", bins, "--actual", actual, "--fail-on-expected")
    assert outcome.code == 0, outcome.out + outcome.err
    assert "emulated force_fp16 (within 10x)" in outcome.verdict
    result = compare(converted.path, bins, actual, options=CompareOptions(fail_on_expected=True))
    (band,) = result.expected
    assert band.rmse_ratio == pytest.approx(1.0)


def test_a_model_that_passes_already_keeps_nothing_and_its_aipp_is_replayed(
        frozen_small_cnn: ModelContract, copy_model: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The small CNN passes under force_fp16; converted with AIPP it takes uint8 bins, and so do the candidates."""
    contract = copy_model(frozen_small_cnn)
    aipp = ("--aipp", "--color", "BGR", "--scale", "0.0078125", "--mean", "1")
    assert run_cli(capsys, "convert", contract.path, "--target", "onnx", *aipp, "--aipp-src-size", "10,10").code == 0
    np.save(tmp_path / "images.npy", np.random.default_rng(0).integers(0, 256, size=(4, 10, 10, 3), dtype=np.uint8))
    assert run_cli(capsys, "dump-bin", "-m", contract.path, "-o", tmp_path / "bins", tmp_path / "images.npy",
                   *aipp[1:]).code == 0
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "tuned")
    assert outcome.code == 0, outcome.out + outcome.err
    assert "force_fp16 passes already: nothing to keep in fp32" in outcome.err
    assert "candidate 1 (baseline, whole): 0 ops in fp32 -> PASSED" in outcome.err
    assert "1 candidate in " in outcome.out
    assert "convert it" not in outcome.err  # model.json's conversion is this mode's: nothing to redo
    outcome = run_cli(capsys, "tune-precision", contract.path, "--input", tmp_path / "bins", "-o", tmp_path / "other",
                      "--precision-mode", "allow_fp32_to_fp16")
    assert ("(model.json's converted model.onnx was made with force_fp16, not allow_fp32_to_fp16: convert it with "
            "allow_fp32_to_fp16 to use it as it is)") in outcome.err
    assert outcome.out.splitlines()[0] == "before: PASSED" and outcome.out.splitlines()[-1] == "FOUND"
    assert (tmp_path / "tuned" / "keep_dtype.cfg").read_text() == ""
    handed = load_contract(tmp_path / "tuned" / "model" / "model.json")
    assert handed.converted is not None and [s.dtype for s in handed.converted.inputs] == ["uint8"]
    assert "--insert_op_conf=" in (tmp_path / "tuned" / "atc_command.txt").read_text()


def test_the_aipp_check_runs_once_per_dataset_not_per_candidate(overflow: tuple[ModelContract, Path],
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every candidate replays the same AIPP config (here: none) on the same bins: its check is made once for the
    subset and once for the whole dataset, and each candidate's comparison carries that answer."""
    import infer.compare._judge.outputs
    from infer.tune._tune import TuneOptions, tune_precision

    real = infer.compare._judge.outputs.check_aipp
    checked: list[Path] = []

    def counting(contract: ModelContract, manifest: Any) -> Any:
        checked.append(manifest.root)
        return real(contract, manifest)

    monkeypatch.setattr(infer.compare._judge.outputs, "check_aipp", counting)
    contract, bins = overflow
    result = tune_precision(contract.path, bins, tmp_path / "tuned", TuneOptions(samples=2))
    datasets = {c.dataset for c in result.candidates}
    assert datasets == {"subset", "whole"} and len(result.candidates) > len(datasets)
    assert len(checked) == len(set(checked)) == 2

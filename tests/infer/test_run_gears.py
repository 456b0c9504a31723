"""msame and ais_bench on a model with gears, end to end on the fakes: a TF model frozen with unknown dims, converted
with gears (the stand-in, posing as an om whose gears the fakes read), dumped at one gear, run with the flag that
names it, its outputs trimmed where msame padded them to the largest gear, compared with TensorFlow."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from binio.errors import InferError
from binio.manifest import load_manifest
from infer.contract import ModelContract, load_contract
from infer.run import RunError, RunOptions, plan_run, run_model
from infer.run.options import Backend
from infer.run.record import load_run
from tests.builders.bins import write_dataset
from tests.cli import Outcome, run_cli
from tests.infer.fcn_model import build_fcn
from tests.infer.run_data import as_om, use_fake_tools


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fcn(tmp_path_factory.mktemp("fcn"), [(4, 1)], seed=5)


def _ok(outcome: Outcome) -> Outcome:
    assert outcome.code == 0, outcome.out + outcome.err
    return outcome


# kind: freeze's --inputs (and --batch), convert's gear option, dump-bin's gear option, the flags the tools get
KINDS = {
    "batch": (["--inputs", "images:0[?,6,6,3]", "--batch", "-1"], ["--dynamic-batch", "1,3,4"], ["--batch", "3"],
              ["--dymBatch", "3"]),
    "image_size": (["--inputs", "images:0[2,-1,-1,3]"], ["--dynamic-image-size", "6,6;8,10"],
                   ["--image-size", "6,6"], ["--dymHW", "6,6"]),
    "dims": (["--inputs", "images:0[2,-1,-1,3]"], ["--dynamic-dims", "6,6;8,10"], ["--dims", "6,6"],
             ["--dymDims", "images:2,6,6,3"]),
    "range": (["--inputs", "images:0[2,-1,-1,3]"],
              ["--soc-version", "Ascend310P3", "--shape-range", "images:2,4~10,4~10,3"], ["--dims", "6,6"],
              ["--dymShape", "images:2,6,6,3", "--outputSize", f"{2 * 6 * 6 * 4 * 4},{2 * 5 * 4}"]),
}


@pytest.fixture(scope="module", params=sorted(KINDS))
def geared(request: pytest.FixtureRequest, checkpoint: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[str, ModelContract, Path]:
    """(kind, the om contract, the bins at its gear)."""
    kind = request.param
    freeze, convert, dump, _ = KINDS[kind]
    root = tmp_path_factory.mktemp(kind)
    from infer.cli.app import main  # module scope: no capsys for run_cli

    def cli(*args: str | Path) -> None:
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            assert exc.code in (0, None), args
    cli("freeze", checkpoint, "-o", root / "frozen", "--outputs", "features,probs", *freeze, "-q")
    cli("convert", root / "frozen", "--target", "onnx", "--precision-mode", "force_fp32", *convert, "-q")
    om = as_om(load_contract(root / "frozen"), root / "om")
    source = "images:0=random:0"
    cli("dump-bin", "-m", om.path, "-o", root / "bins", "--source", source, "--samples", "6", *dump, "-q")
    return kind, om, root / "bins"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["msame", "ais_bench"])
def test_each_tool_gets_the_datasets_gear_and_its_outputs_come_back_at_the_gears_size(
        geared: tuple[str, ModelContract, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], backend: Backend) -> None:
    kind, om, bins = geared
    use_fake_tools(monkeypatch)
    ran = run_model(om, bins, tmp_path / "runs", RunOptions(backend=backend))
    flags = KINDS[kind][3]
    command = list(ran.record.tool_command)
    assert command[command.index("--outfmt") + 2:][:len(flags)] == flags
    manifest = load_manifest(bins)
    batch, height, width, _ = manifest.inputs[0].shape
    assert [spec.shape for spec in ran.record.outputs] == [(batch, height, width, 4), (batch, 5)]
    gear = ran.record.gear
    assert gear is not None and gear.kind == kind and gear.flags == tuple(flags)
    # msame writes the largest gear's buffer for image-size and dims gears, and for batch 3 of gears 1,3,4
    # (4 // 3 = 1: the whole buffer); ais_bench and a shape range's --dymShape write the real size
    if backend == "msame" and kind != "range":
        largest = {"batch": 4 * 6 * 6 * 4, "image_size": 2 * 8 * 10 * 4, "dims": 2 * 8 * 10 * 4}[kind] * 4
        trimmed = {t.output: (t.written_bytes, t.kept_bytes, t.files) for t in gear.trimmed}
        assert trimmed["features:0"] == (largest, batch * height * width * 4 * 4, manifest.file_count)
        if kind == "batch":
            assert trimmed["probs:0"] == (4 * 5 * 4, 3 * 5 * 4, manifest.file_count)
        else:
            assert "probs:0" not in trimmed  # the same size at every image size
    else:
        assert gear.trimmed == ()
    document = json.loads((ran.folder / "run.json").read_text())
    assert document["gear"]["label"] == manifest.gear_label
    assert load_run(ran.folder).gear == gear
    compared = run_cli(capsys, "compare", om.path, "--input", bins, "--actual", ran.folder)
    assert compared.code == 0, compared.out + compared.err
    assert compared.verdict.startswith("PASSED")


@pytest.mark.slow
def test_the_dry_run_prints_the_gear_flags(geared: tuple[str, ModelContract, Path], tmp_path: Path) -> None:
    kind, om, bins = geared
    for backend in ("msame", "ais_bench"):
        plan = plan_run(om, bins, tmp_path / "runs", RunOptions(backend=backend, dry_run=True))
        (command,) = plan.commands
        assert " ".join(KINDS[kind][3]) in " ".join(command)
        assert plan.gear == load_manifest(bins).gear_label
    assert not (tmp_path / "runs").exists()


def test_the_dry_run_of_a_stand_in_conversion_prints_the_servers_line(geared: tuple[str, ModelContract, Path],
                                                                       tmp_path: Path) -> None:
    """Converted here for the stand-in, the model has no om yet: the line names the om ATC writes beside it (what
    the user runs on the Ascend server), with the dataset's gear flags, and the plan says so."""
    kind, om, bins = geared
    stand_in = load_contract(om.folder.parent / "frozen")
    assert stand_in.converted is not None and stand_in.converted.target == "onnx"
    for backend in ("msame", "ais_bench"):
        plan = plan_run(stand_in, bins, tmp_path / "runs", RunOptions(backend=backend, dry_run=True))
        (command,) = plan.commands
        assert command[command.index("--model") + 1].endswith("frozen/model.om")
        assert " ".join(KINDS[kind][3]) in " ".join(command)
        assert plan.model.name == "model.om" and "converted here for the stand-in, model.onnx" in plan.summary
    with pytest.raises(InferError, match=r"the msame backend runs an \.om, convert produced an onnx model"):
        run_model(stand_in, bins, tmp_path / "runs", RunOptions(backend="msame"))
    assert not (tmp_path / "runs").exists()


def test_a_dataset_at_no_gear_of_the_om_is_refused_before_the_tool_starts(
        geared: tuple[str, ModelContract, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kind, om, _ = geared
    use_fake_tools(monkeypatch)
    # batch 2: no gear of 1,3,4; 5x7: neither 6x6 nor 8x10; 12x12: outside the range 4~10
    shape = {"batch": (2, 6, 6, 3), "range": (2, 12, 12, 3)}.get(kind, (2, 5, 7, 3))
    write_dataset(tmp_path / "bins", {"images:0": [np.zeros(shape, np.float32)]})
    for backend in ("msame", "ais_bench"):
        with pytest.raises(InferError) as refused:
            run_model(om, tmp_path / "bins", tmp_path / "runs", RunOptions(backend=backend))
        assert ("outside its range 4~10" if kind == "range" else "not a gear of the model") in str(refused.value)
    assert not (tmp_path / "runs").exists()  # made just before the tool starts


def test_outputs_an_om_states_at_its_largest_gear_are_taken_at_the_datasets(
        geared: tuple[str, ModelContract, Path]) -> None:
    from binio.spec import TensorSpec
    from infer.run._gear import gear_run

    kind, om, bins = geared
    manifest = load_manifest(bins)
    batch, height, width, _ = manifest.inputs[0].shape
    largest = {"batch": (4, 6, 6), "range": (2, 10, 10)}.get(kind, (2, 8, 10))
    stated = (TensorSpec("features:0", "float32", (*largest, 4)), TensorSpec("probs:0", "float32", (largest[0], 5)))
    run = gear_run(om, manifest, om.model_inputs, stated)
    assert run is not None and run.label == manifest.gear_label
    assert [spec.shape for spec in run.outputs] == [(batch, height, width, 4), (batch, 5)]


@pytest.mark.parametrize("geared", ["batch"], indirect=True)
def test_a_dataset_json_naming_another_gear_than_its_bins_is_refused(
        geared: tuple[str, ModelContract, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, om, bins = geared
    use_fake_tools(monkeypatch)
    copy = tmp_path / "bins"
    shutil.copytree(bins, copy)
    document = json.loads((copy / "dataset.json").read_text())
    document["gear"] = {"kind": "batch", "values": [4]}
    (copy / "dataset.json").write_text(json.dumps(document))
    with pytest.raises(InferError) as refused:
        run_model(om, copy, tmp_path / "runs", RunOptions(backend="msame"))
    assert str(refused.value) == f"{copy / 'dataset.json'}: says its bins are batch 4, their shapes are batch 3"
    assert not (tmp_path / "runs").exists()


def test_the_dry_run_line_names_the_gear(geared: tuple[str, ModelContract, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    kind, om, bins = geared
    outcome = _ok(run_cli(capsys, "run", om.path, "--input", bins, "-o", tmp_path / "runs", "--dry-run"))
    summary, line = outcome.out.splitlines()
    manifest = load_manifest(bins)
    assert summary == f"msame runs model.om at {manifest.gear_label} over {manifest.file_count} batches in one start"
    assert shlex.split(line)[-len(KINDS[kind][3]):] == KINDS[kind][3]


@pytest.mark.slow
def test_one_batch_through_msame_at_the_gear_comes_back_trimmed(
        geared: tuple[str, ModelContract, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from binio.binfile import read_bin
    from infer.run._gear import gear_run
    from infer.run._runners.msame import MsameRunner

    kind, om, bins = geared
    use_fake_tools(monkeypatch)
    manifest = load_manifest(bins)
    images = read_bin(manifest.root / manifest.inputs[0].folder / "000000.bin", om.model_inputs[0].with_shape(
        manifest.inputs[0].shape))
    with MsameRunner.from_contract(om) as runner:
        runner.use_gear(gear_run(om, manifest, runner.inputs, runner.outputs))
        features, probs = runner.infer({"images:0": np.asarray(images)})
    assert features.shape == (*manifest.inputs[0].shape[:3], 4) and probs.shape == (manifest.batch, 5)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)  # a softmax, not the buffer's 0xff tail
    assert np.isfinite(features).all(), kind


@pytest.mark.slow
@pytest.mark.parametrize("geared", ["image_size"], indirect=True)
def test_a_sharded_run_gives_every_shard_the_gear(geared: tuple[str, ModelContract, Path], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from infer.run import ScaleOptions

    _, om, bins = geared
    use_fake_tools(monkeypatch)
    plain = run_model(om, bins, tmp_path / "plain", RunOptions(backend="msame"))
    sharded = run_model(om, bins, tmp_path / "sharded", RunOptions(backend="msame"), ScaleOptions(shards=2))
    assert sharded.record.completed and sharded.record.outputs == plain.record.outputs
    for stem in plain.record.stems:
        for index in range(2):
            assert (sharded.record.output_path(stem, index).read_bytes()
                    == plain.record.output_path(stem, index).read_bytes())


@pytest.mark.parametrize("geared", ["image_size"], indirect=True)
def test_a_gear_shape_the_graph_refuses_is_named(geared: tuple[str, ModelContract, Path]) -> None:
    from infer.run._gear import _inferred_shapes

    _, om, _ = geared
    with pytest.raises(RunError) as refused:
        _inferred_shapes(om, {"images:0": (2, 6, 6)})  # a rank the convolution does not take
    assert str(refused.value).startswith(f"{om.pb_path}: TensorFlow cannot take the inputs at images:0 (2,6,6): ")


def _by_hand(om: ModelContract, bins: Path, backend: Backend, out: Path) -> Path:
    """The dry run's printed line run through a shell, as the user pastes it on the server: the tool's own folder."""
    import subprocess

    (line,) = plan_run(om.path, bins, out, RunOptions(backend=backend, dry_run=True)).lines()
    subprocess.run(line, shell=True, check=True, capture_output=True)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["msame", "ais_bench"])
def test_the_tools_own_folder_of_the_printed_line_compares_as_infer_runs_folder(
        geared: tuple[str, ModelContract, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], backend: Backend) -> None:
    """msame's files padded to the largest gear's buffer (image-size and dims gears, batch 3 of 1,3,4) are read at
    the dataset's gear; ais_bench's, and a shape range's, are its real size: both compare as infer run's folder."""
    from infer.compare import compare_outputs as compare

    kind, om, bins = geared
    use_fake_tools(monkeypatch)
    monkeypatch.chdir(tmp_path)
    tool_folder = _by_hand(om, bins, backend, Path("by-hand"))
    ran = run_model(om, bins, tmp_path / "runs", RunOptions(backend=backend))
    by_hand = compare(om, bins, Path("by-hand"))
    by_infer = compare(om, bins, ran.folder)
    assert by_hand.passed and by_infer.passed
    assert [o.metrics for o in by_hand.outputs] == [o.metrics for o in by_infer.outputs]
    assert [o.shape for o in by_hand.outputs] == [spec.shape for spec in ran.record.outputs]
    assert by_hand.provenance is not None
    side = by_hand.provenance.actual
    assert side.backend == backend and side.run_folder == str(tool_folder)
    label = load_manifest(bins).gear_label
    padded = backend == "msame" and kind != "range"
    layout = "bin, matched by the dataset's file names"
    if padded:  # probs:0 is the same size at every image size
        layout += (f"; msame's files padded to the largest gear's buffer, trimmed to {label}'s "
                   f"({'features:0, probs:0' if kind == 'batch' else 'features:0'})")
    assert side.layout == layout
    outcome = run_cli(capsys, "compare", om.path, "--input", bins, "--actual", "by-hand")
    assert outcome.code == 0 and outcome.verdict.startswith("PASSED"), outcome.out + outcome.err


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["msame", "ais_bench"])
def test_a_tools_file_cut_short_or_padded_beyond_the_largest_buffer_is_refused(
        geared: tuple[str, ModelContract, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], backend: Backend) -> None:
    kind, om, bins = geared
    use_fake_tools(monkeypatch)
    monkeypatch.chdir(tmp_path)
    tool_folder = _by_hand(om, bins, backend, Path("by-hand"))
    manifest = load_manifest(bins)
    batch, height, width, _ = manifest.inputs[0].shape
    expected = batch * height * width * 4 * 4  # features:0 at the gear, float32
    largest = {"batch": 4 * 6 * 6 * 4 * 4, "image_size": 2 * 8 * 10 * 4 * 4, "dims": 2 * 8 * 10 * 4 * 4,
               "range": expected}[kind]
    name = f"{manifest.stems[0]}_output_0.bin" if backend == "msame" else f"{manifest.stems[0]}_0.bin"
    target = tool_folder / name
    for size in (expected - 4, largest + 4):
        target.write_bytes(np.zeros(size // 4, np.float32).tobytes())
        outcome = run_cli(capsys, "compare", om.path, "--input", bins, "--actual", "by-hand")
        assert outcome.code != 0
        assert outcome.error_line == (f"error: {target}: expected {expected} bytes "
                                      f"for shape ({batch},{height},{width},4) float32, got {size}"), outcome.err


@pytest.mark.slow
@pytest.mark.parametrize("geared", ["image_size"], indirect=True)
def test_msames_text_outputs_padded_to_the_largest_gear_are_read_at_the_gear(
        geared: tuple[str, ModelContract, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--outfmt TXT: the buffer's values as text (six significant digits), its first values the gear's."""
    from infer.compare import compare_outputs

    _, om, bins = geared
    use_fake_tools(monkeypatch)
    monkeypatch.chdir(tmp_path)
    tool_folder = _by_hand(om, bins, "msame", Path("by-hand"))
    for path in sorted(tool_folder.glob("*_output_*.bin")):
        values = np.fromfile(path, np.float32)
        path.with_suffix(".txt").write_text(" ".join(f"{v:.6g}" for v in values))
        path.unlink()
    result = compare_outputs(om, bins, Path("by-hand"))
    assert result.passed and result.provenance is not None
    assert result.provenance.actual.layout == ("txt, matched by the dataset's file names; msame's files padded to "
                                               "the largest gear's buffer, trimmed to image size 6x6's (features:0)")

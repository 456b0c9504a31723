"""`infer demo` end to end (TensorFlow, tf2onnx, ONNX Runtime for real), then `infer pipeline` on the file the
demo wrote: re-runs skip what has not changed, a changed setting re-runs exactly the stages after it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from infer.demo._run import DemoResult, run_demo
from infer.pipeline._stages import STAGES
from tests.cli import Outcome, run_cli

pytestmark = pytest.mark.slow


def _sync(capsys: pytest.CaptureFixture[str], result: DemoResult) -> None:
    """Brings the pipeline state back to the demo's own file, whatever an earlier test on this worker changed."""
    assert run_cli(capsys, "pipeline", "run", str(result.pipeline_file)).code == 0


def _run_edited(capsys: pytest.CaptureFixture[str], result: DemoResult, old: str, new: str) -> Outcome:
    """`infer pipeline run` on the demo's pipeline file with `old` replaced by `new`; the file is restored after."""
    toml = result.pipeline_file
    text = toml.read_text()
    assert old in text, f"{old!r} is not in {toml}"
    toml.write_text(text.replace(old, new))
    try:
        return run_cli(capsys, "pipeline", "run", str(toml))
    finally:
        toml.write_text(text)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, list[str]]:
    lines: list[str] = []
    result = run_demo(tmp_path_factory.mktemp("demo"), on_step=lines.append,
                      on_stage=lambda outcome: lines.append(outcome.line()))
    return result, lines


def test_demo_runs_every_stage_and_passes(demo: tuple[DemoResult, list[str]]) -> None:
    result, lines = demo
    assert [line.split()[0] for line in lines] == ["checkpoint", "dataset", *STAGES]
    assert all(outcome.ran for outcome in result.pipeline.stages)
    # compare's own last line: the verdict, then both sides (as `infer compare` prints it)
    assert result.pipeline.passed and result.pipeline.verdict.startswith("PASSED | golden: tensorflow model.pb (")
    assert " | actual: onnxrt model.onnx force_fp16 (" in result.pipeline.verdict
    compare_line = lines[-1]
    # The labels are the rule that drew the images, the model was trained on that rule: it is right, and the
    # fp16-emulated stand-in agrees with TensorFlow on every sample.
    assert "top-1 agreement 100.0%, accuracy TF 100.0% vs converted 100.0%" in compare_line
    report = json.loads((result.pipeline.work_dir / "report" / "report.json").read_text())
    metrics = report["outputs"][0]["metrics"]
    assert report["padding_excluded"] == 4 and report["samples"] == 60
    # force_fp16 is emulated for real: close to TensorFlow, but not equal.
    assert 0 < metrics["MaxAbsoluteError"] < 0.05
    assert metrics["CosineSimilarity"] > 0.999
    html = result.pipeline.report_html
    assert html is not None and "data:image/png;base64," in html.read_text()


def test_demo_contract_is_frozen_and_converted_as_documented(demo: tuple[DemoResult, list[str]]) -> None:
    from infer.contract import load_contract

    result, _ = demo
    contract = load_contract(result.pipeline.work_dir / "model" / "model.json")
    assert [(s.name, s.shape) for s in contract.inputs] == [("images:0", (8, 32, 32, 3))]
    assert [s.name for s in contract.outputs] == ["probs:0"]
    assert contract.fixed == {"is_training": "false"}
    assert contract.converted is not None and contract.converted.precision_mode == "force_fp16"


def test_pipeline_report_ends_with_the_commands(demo: tuple[DemoResult, list[str]]) -> None:
    result, _ = demo
    text = result.pipeline.report_path.read_text()
    work = result.pipeline.work_dir
    assert f"  infer freeze {result.model.prefix} -o {work / 'model'} --outputs probs:0 --inputs images:0 " \
           "--batch 8 --set is_training=false --force" in text
    assert f"  infer convert {work / 'model' / 'model.json'} --soc-version Ascend310 --precision-mode force_fp16" \
        in text
    atc = next(line for line in text.splitlines() if line.startswith("  atc "))
    assert "--framework=3" in atc and "--input_shape=images:8,32,32,3" in atc and "--out_nodes=probs:0" in atc
    assert text.rstrip().splitlines()[-1] == (
        f"  msame --model {work / 'model' / 'model.om'} --input {work / 'bins' / 'images'} "
        f"--output {work / 'out' / 'msame'} --outfmt BIN")


def test_pipeline_report_names_the_infer_that_wrote_it(demo: tuple[DemoResult, list[str]]) -> None:
    import infer

    result, _ = demo
    lines = result.pipeline.report_path.read_text().splitlines()
    assert lines[0].startswith("infer pipeline ") and lines[1] == f"infer {infer.__version__}"


def test_demo_again_skips_every_stage(demo: tuple[DemoResult, list[str]],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    result, _ = demo
    _sync(capsys, result)
    outcome = run_cli(capsys, "demo", "-o", str(result.out_dir))
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    stage_lines = [line for line in lines if line.split()[0] in STAGES]
    assert len(stage_lines) == len(STAGES)
    assert all(line.split()[1] == "skip" and line.endswith("(unchanged)") for line in stage_lines)
    assert lines[-3:-1] == [result.pipeline.verdict, f"report: {result.pipeline.report_html}"]
    assert lines[-3].startswith("PASSED | golden: ")


def test_paths_under_the_current_folder_are_printed_relative_to_it(demo: tuple[DemoResult, list[str]],
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """One way to name a file in one output: under the current folder, relative to it (as the user typed -o)."""
    result, _ = demo
    _sync(capsys, result)
    monkeypatch.chdir(result.out_dir.parent)
    outcome = run_cli(capsys, "demo", "-o", result.out_dir.name)
    assert outcome.code == 0, outcome.err
    assert str(result.out_dir) not in outcome.out + outcome.err
    name = result.out_dir.name
    assert f"report: {name}/work/report/report.html" in outcome.out.splitlines()
    assert outcome.out.splitlines()[-1].startswith(f"re-run or edit: infer pipeline run {name}/pipeline.toml  "
                                                   f"(commands: {name}/work/pipeline-report.txt)")


def test_changed_precision_reruns_convert_and_what_follows(demo: tuple[DemoResult, list[str]],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    result, _ = demo
    _sync(capsys, result)
    outcome = _run_edited(capsys, result, 'precision_mode = "force_fp16"', 'precision_mode = "force_fp32"')
    assert outcome.code == 0, outcome.err
    ran = {line.split()[0]: line.split()[1] != "skip" for line in outcome.out.splitlines()
           if line.split() and line.split()[0] in STAGES}
    assert ran == {"inspect": False, "freeze": False, "convert": True, "dump-bin": True, "run": True,
                   "compare": True}
    assert "precision force_fp32" in outcome.out
    verdict = next(line for line in outcome.out.splitlines() if line.startswith("PASSED"))
    assert " | actual: onnxrt model.onnx force_fp32 (" in verdict  # the rerun's sides, not the first run's


def test_pipeline_init_from_the_demo_checkpoint(demo: tuple[DemoResult, list[str]], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from infer.pipeline.config import load_config

    result, _ = demo
    target = tmp_path / "pipeline.toml"
    outcome = run_cli(capsys, "pipeline", "init", str(result.model.prefix), "-o", str(target),
                      "--data", str(result.dataset.image_folder))
    assert outcome.code == 0, outcome.err
    config = load_config(target)
    assert config.model.outputs == ("probs:0",)
    assert config.model.freeze.inputs == ("images:0",)  # the loss's labels placeholder is not read by probs:0
    text = target.read_text()
    assert "# With a default here: is_training:0" in text
    assert "# Placeholders probs:0 does not read, left out of inputs: labels:0." in text
    again = run_cli(capsys, "pipeline", "init", str(result.model.prefix), "-o", str(target))
    assert again.code == 2
    assert again.error_line == f"error: {target}: exists already"
    folder = run_cli(capsys, "pipeline", "init", str(result.model.prefix), "-o", str(tmp_path))
    assert folder.error_line == f"error: -o {tmp_path}: is a folder; expected the pipeline file to write"


def test_pipeline_init_from_a_frozen_pb_takes_its_static_batch(demo: tuple[DemoResult, list[str]], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from infer.pipeline.config import load_config

    result, _ = demo
    target = tmp_path / "pipeline.toml"
    outcome = run_cli(capsys, "pipeline", "init", str(result.pipeline.work_dir / "model" / "model.pb"), "-o",
                      str(target), "--data", str(result.dataset.image_folder))
    assert outcome.code == 0, outcome.err
    config = load_config(target)
    # the pb's (8,32,32,3); 1 would clash
    assert (config.model.freeze.inputs, config.model.freeze.batch) == (("images:0",), 8)


def test_report_says_why_there_is_no_atc_command(demo: tuple[DemoResult, list[str]],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    result, _ = demo
    outcome = _run_edited(capsys, result, 'soc_version = "Ascend310"', 'soc_version = ""')
    assert outcome.code == 0, outcome.err  # the stand-in assumes a chip
    lines = outcome.out.splitlines()
    note = lines[lines.index("on an Ascend machine, by hand:") + 1]
    assert note.startswith("  (no ATC command: --soc-version is required for --target om")
    assert lines[-1].startswith("  msame --model ")


def test_a_chip_typo_is_refused_before_the_server_sees_it(demo: tuple[DemoResult, list[str]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The stand-in refuses a --soc-version ATC would refuse (it once planned for Ascend310 and passed), with the
    same suggestion; allow_unknown_soc = true is the explicit way past, and the report's ATC command carries it."""
    result, _ = demo
    outcome = _run_edited(capsys, result, 'soc_version = "Ascend310"', 'soc_version = "Ascend999"')
    assert outcome.code == 2
    assert outcome.error_line.startswith("error: convert: --soc-version 'Ascend999': not a chip ATC knows "
                                         "(did you mean ")
    allowed = _run_edited(capsys, result, 'soc_version = "Ascend310"',
                          'soc_version = "Ascend999"\nallow_unknown_soc = true')
    assert allowed.code == 0, allowed.err
    atc = next(line for line in allowed.out.splitlines() if line.startswith("  atc "))
    assert "--soc_version=Ascend999" in atc
    _sync(capsys, result)


def test_stricter_threshold_reruns_only_compare_and_fails(demo: tuple[DemoResult, list[str]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    result, _ = demo
    _sync(capsys, result)
    # fp16 storage puts the max |diff| near 1e-3: a limit of 1e-6 on it must fail.
    outcome = _run_edited(capsys, result, "[compare]\n", "[compare]\nthresholds = { max_abs = 1e-6 }\n")
    assert outcome.code == 1
    stage_lines = [line for line in outcome.out.splitlines() if line.split() and line.split()[0] in STAGES]
    assert [line.split()[1] == "skip" for line in stage_lines] == [True] * 5 + [False]
    # The verdict as `infer compare` prints it: one short line, what it rests on below it.
    lines = outcome.out.splitlines()
    verdict = next(line for line in lines if line.startswith("FAILED"))
    assert verdict.startswith("FAILED: probs:0 MaxAbsoluteError ") and verdict.endswith("> 1e-06"), verdict
    below = lines[lines.index(verdict) + 1:]
    assert any(line.startswith("  golden: tensorflow model.pb (") for line in below), below


def test_layerwise_on_the_demo_model_marks_no_tensor_under_fp16(demo: tuple[DemoResult, list[str]],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """force_fp16 keeps every layer close; tf2onnx computes the stem in NCHW, whose pooled (8,16,16,16) tensor has
    the same shape in either layout, and must still be read in TensorFlow's."""
    result, _ = demo
    _sync(capsys, result)
    outcome = _run_edited(capsys, result, "[compare]\n", "[compare]\nlayerwise = true\n")
    assert outcome.code == 0, outcome.out + outcome.err
    report = json.loads((result.pipeline.work_dir / "report" / "report.json").read_text())
    layers = {row["tensor"]: row for row in report["layerwise"]["tensors"]}
    assert report["layerwise"]["diverges_at"] is None
    assert layers["stem/pool:0"]["matched"] and layers["stem/pool:0"]["shape"] == [8, 16, 16, 16]
    assert layers["stem/pool:0"]["metrics"]["CosineSimilarity"] > 0.999
    # FusedBatchNorm's batch statistics lead nowhere at inference: not listed.
    assert "stem/FusedBatchNormV3:0" in layers and "stem/FusedBatchNormV3:1" not in layers


def test_demo_into_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "demo-out"
    target.write_text("not a folder")
    outcome = run_cli(capsys, "demo", "-o", str(target))
    assert outcome.code == 2
    assert outcome.error_line == f"error: -o {target}: is a file; the demo writes into a folder"


def _files(folder: Path, moved: tuple[Path, Path] | None = None) -> dict[str, bytes]:
    """Every file under `folder` (caches left out), with paths under moved[0] read as if under moved[1]."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_file() and not name.startswith("."):
            data = path.read_bytes()
            found[name] = data.replace(str(moved[0]).encode(), str(moved[1]).encode()) if moved else data
    return found


def test_the_reports_commands_reproduce_every_stage(demo: tuple[DemoResult, list[str]], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Each `infer ...` line of the report, run by hand in a copy of the demo folder, writes what the pipeline
    stage wrote: the same bytes, the same recorded settings (issue 14: the pipeline and the flags cannot drift)."""
    result, _ = demo
    _sync(capsys, result)
    _reproduce_by_hand(result, tmp_path, capsys)


def test_the_reports_commands_reproduce_every_stage_with_every_table_edited(
        demo: tuple[DemoResult, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same with settings off their defaults in every table: image options (colour, resize, mean, std),
    run's counts and threads, compare's top-k, thresholds and band; each reaches the printed command."""
    result, _ = demo
    toml = result.pipeline_file
    text = toml.read_text()
    edits = {"\n[run]\n": "\n[run]\nloop = 2\nwarmup = 0\nthreads = 1\n",
             "\n[compare]\n": "\n[compare]\ntopk = 3\nexpected_factor = 20\n"
                              'thresholds = { cosine = 0.9, kl = "off" }\n',
             "\nscale = ": '\ncolor = "bgr"\nresize = 40\nmean = [0.5, 0.4, 0.3]\nstd = [0.25]\nscale = '}
    edited = text
    for old, new in edits.items():
        assert edited.count(old) == 1, old
        edited = edited.replace(old, new)
    toml.write_text(edited)
    try:
        assert run_cli(capsys, "pipeline", "run", str(toml)).code == 0
        words = " " + " ".join(result.pipeline.report_path.read_text().split()) + " "
        for flags in ("--resize 40 --color BGR", "--mean 0.5,0.4,0.3 --std 0.25", "--loop 2 --warmup 0 --threads 1",
                      "--topk 3 --threshold cosine=0.9 --threshold kl=off", "--expected-factor 20.0"):
            assert f" {flags} " in words, flags
        _reproduce_by_hand(result, tmp_path, capsys)
    finally:
        toml.write_text(text)
        _sync(capsys, result)  # the demo's own report and work folder back for the tests that read them


def _reproduce_by_hand(result: DemoResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs every `infer ...` line of the pipeline's report in a copy of the demo folder and asserts that each
    wrote what its stage wrote."""
    import shlex
    import shutil

    root = result.pipeline_file.parent
    work = result.pipeline.work_dir
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(work.name))
    lines = result.pipeline.report_path.read_text().splitlines()
    start = lines.index("the same, stage by stage:") + 1
    commands = [shlex.split(line) for line in lines[start:] if line.startswith("  infer ")]
    assert [c[1] for c in commands] == list(STAGES)
    from infer.pipeline._state import load_state

    pipeline_run = Path(str(load_state(work)["run"].facts["run_folder"]))  # other tests leave other run folders
    for command in commands:  # as printed: the compare line takes the newest run, --force its report folder
        args = [a.replace(str(root), str(copy)) for a in command[1:]]
        outcome = run_cli(capsys, *args)
        assert outcome.code == 0, (args, outcome.err)

    by_hand = copy / work.name
    for folder in ("model", "bins"):
        hand, staged = _files(by_hand / folder, (copy, root)), _files(work / folder)
        assert hand.keys() == staged.keys(), folder
        for name in hand:  # model.onnx too: the same pb converts to the same bytes
            assert hand[name] == staged[name], name
    hand_run = next(p for p in (by_hand / "out").iterdir() if p.is_dir())
    pipeline_outputs = {k: v for k, v in _files(pipeline_run).items() if k.endswith(".bin")}
    assert pipeline_outputs and {k: v for k, v in _files(hand_run).items() if k.endswith(".bin")} == pipeline_outputs
    settings = ("backend", "device", "loop", "warmup", "threads", "stems", "rows", "outputs")
    hand_record, pipeline_record = (json.loads((p / "run.json").read_text()) for p in (hand_run, pipeline_run))
    assert {k: hand_record.get(k) for k in settings} == {k: pipeline_record.get(k) for k in settings}
    hand_report, pipeline_report = (json.loads((w / "report" / "report.json").read_text()) for w in (by_hand, work))
    for key in ("outputs", "passed", "samples", "padding_excluded", "expected_from_emulation",
                "samples_failing_on_their_own", "per_sample_fails_run"):
        assert hand_report.get(key) == pipeline_report.get(key), key


def test_the_fp16_trouble_demo_fails_names_the_op_tunes_and_passes(tmp_path: Path) -> None:
    """--fp16-trouble: the failure workflow end to end. The sum of squares of the scaled features passes 65504
    under force_fp16: compare fails and --layerwise names an op of that normalisation, tune-precision keeps the
    sum in fp32, and the pipeline run again with its keep_dtype file passes."""
    lines: list[str] = []
    result = run_demo(tmp_path, on_step=lines.append, on_stage=lambda outcome: lines.append(outcome.line()),
                      fp16_trouble=True)
    first = result.failed_first
    assert first is not None and not first.passed and first.verdict.startswith(
        "FAILED: fp16 overflow (or underflow) inside the network; probs:0 ")
    compare_line = next(line for line in lines if line.startswith("compare"))
    assert "first diverging tensor l2norm/" in compare_line
    assert result.tuned is not None and result.tuned.found
    assert "l2norm/energy" in {op.name for op in result.tuned.ops}
    assert result.pipeline.passed and result.pipeline.verdict.startswith("PASSED")
    assert result.pipeline_file.name == "pipeline-fp16-trouble.toml"
    assert 'keep_dtype = "work-fp16-trouble/tune/keep_dtype.cfg"' in result.pipeline_file.read_text()
    assert any(line.startswith("again, with [convert] keep_dtype") for line in lines)
    assert not (tmp_path / "work").exists()  # the ordinary demo's work folder is its own
    # It teaches the words: the cause the plain verdict names, what fp16 holds, what became of the value.
    taught = "\n".join(lines[:next(i for i, line in enumerate(lines) if line.startswith("tune-precision"))])
    assert "FAILED: fp16 overflow (or underflow) inside the network" in taught
    assert all(word in taught for word in ("overflow", "65504", "became inf")), taught
    # Both reports are kept: the failed run's, then the passing one's beside it.
    assert result.failed_report is not None and result.pipeline.report_html is not None
    assert result.failed_report != result.pipeline.report_html
    assert "FAILED" in result.failed_report.read_text() and "fp16 overflow" in result.failed_report.read_text()
    assert "PASSED" in result.pipeline.report_html.read_text()
    # The README shows these lines as the demo prints them.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    shown = readme.split("```\ncheckpoint  demo-out/checkpoint-fp16-trouble/", 1)[1].split("```", 1)[0].splitlines()
    shown[0] = "checkpoint  demo-out/checkpoint-fp16-trouble/" + shown[0]
    printed = [*lines, result.pipeline.verdict]
    assert [_alike(line, tmp_path) for line in shown[:len(printed)]] == [_alike(line, tmp_path) for line in printed]


def _alike(line: str, out_dir: Path) -> str:
    """A demo line with what changes from run to run made alike: its folder, numbers, digests, and the padding
    that aligns a stage's seconds (a slow machine's 12.3s is one column wider than 0.8s)."""
    line = line.replace(str(out_dir), "demo-out")
    line = re.sub(r"\b[0-9a-f]{8}\b", "H", line)
    line = re.sub(r"\d[\d,.]*", "N", line)
    return re.sub(r" {2,}", "  ", line)


def test_the_readmes_demo_output_is_what_the_demo_prints(demo: tuple[DemoResult, list[str]]) -> None:
    """The README shows the demo's lines as it prints them: a stage line reworded (or a candidate inspect no
    longer offers) fails here until the README is updated."""
    result, lines = demo
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    shown = readme.split("```\ncheckpoint  ", 1)[1].split("```", 1)[0].splitlines()
    printed = [*lines, result.pipeline.verdict]
    assert [_alike(line, result.out_dir) for line in ["checkpoint  " + shown[0], *shown[1:len(printed)]]] == \
        [_alike(line, result.out_dir) for line in printed]

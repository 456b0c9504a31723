"""The pipeline's skip rule, on two small stages that copy files: a stage runs again exactly when its settings,
something it reads, or something it wrote has changed since it last ran."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from infer.pipeline import _runner as runner_module
from infer.pipeline._runner import run_pipeline
from infer.pipeline._stages import StageDone, StagePlan, WorkLayout
from infer.pipeline._state import STATE_FILE
from infer.pipeline._work import Facts
from infer.pipeline.config import PipelineConfig, config_from_dict


@pytest.fixture
def config(tmp_path: Path) -> PipelineConfig:
    (tmp_path / "source.txt").write_text("hello\n")
    document = {"model": {"source": "source.txt", "outputs": ["x:0"], "batch": 2}, "data": {"source": "random:0"}}
    return config_from_dict(document, tmp_path / "pipeline.toml")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two stages: `upper` reads source.txt and writes upper.txt (upper-cased, its batch appended); `count` reads
    upper.txt and writes count.txt. Returns the list of stages that actually ran, in order."""
    ran: list[str] = []

    def plan_upper(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
        return StagePlan("upper", (config.model_source,), {"batch": config.model.freeze.batch}, ("upper",))

    def run_upper(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
        ran.append("upper")
        target = work.root / "upper.txt"
        target.write_text(config.model_source.read_text().upper() + ("!" * (config.model.freeze.batch or 1)))
        return StageDone(f"wrote {target.name}", (target,), {"length": len(target.read_text())})

    def plan_count(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
        return StagePlan("count", (work.root / "upper.txt",), {}, ("count", str(facts.get("upper", {}))))

    def run_count(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
        ran.append("count")
        target = work.root / "count.txt"
        target.write_text(str(facts["upper"]["length"]))
        return StageDone(f"counted {facts['upper']['length']}", (target,))

    monkeypatch.setattr(runner_module, "STAGE_FUNCTIONS", {"upper": (plan_upper, run_upper),
                                                           "count": (plan_count, run_count)})
    return ran


def _run(config: PipelineConfig, **kwargs: Any) -> list[bool]:
    result = run_pipeline(config, stages=("upper", "count"), **kwargs)
    return [s.ran for s in result.stages]


def test_second_run_skips_everything_and_keeps_the_summaries(config: PipelineConfig, calls: list[str]) -> None:
    assert _run(config) == [True, True]
    result = run_pipeline(config, stages=("upper", "count"))
    assert [s.ran for s in result.stages] == [False, False]
    assert [s.summary for s in result.stages] == ["wrote upper.txt", "counted 8"]
    assert result.stages[1].line().endswith("counted 8 (unchanged)")
    assert calls == ["upper", "count"]
    assert (config.work_dir / STATE_FILE).is_file()


def test_each_stage_is_heard_as_it_starts_then_as_it_ends(config: PipelineConfig, calls: list[str]) -> None:
    heard: list[str] = []
    run_pipeline(config, stages=("upper", "count"), on_start=lambda key: heard.append(f"start {key}"),
                 on_stage=lambda outcome: heard.append(f"done {outcome.stage}"))
    assert heard == ["start upper", "done upper", "start count", "done count"]


def test_changed_input_reruns_that_stage_and_what_depends_on_its_output(config: PipelineConfig,
                                                                       calls: list[str]) -> None:
    _run(config)
    (config.folder / "source.txt").write_text("hello, world\n")
    assert _run(config) == [True, True]
    assert calls == ["upper", "count", "upper", "count"]


def test_rewritten_input_with_same_bytes_is_not_a_change(config: PipelineConfig, calls: list[str]) -> None:
    _run(config)
    (config.folder / "source.txt").write_text("hello\n")
    assert _run(config) == [False, False]


def test_touched_output_reruns_the_stage_that_wrote_it(config: PipelineConfig, calls: list[str]) -> None:
    _run(config)
    (config.work_dir / "count.txt").write_text("tampered")
    assert _run(config) == [False, True]
    assert (config.work_dir / "count.txt").read_text() == "8"
    (config.work_dir / "count.txt").unlink()
    assert _run(config) == [False, True]


def test_changed_settings_rerun_the_stage(config: PipelineConfig, calls: list[str]) -> None:
    from dataclasses import replace

    _run(config)
    changed = replace(config, model=replace(config.model, freeze=replace(config.model.freeze, batch=3)))
    assert _run(changed) == [True, True]  # upper.txt changed, so count reads something new
    assert (config.work_dir / "count.txt").read_text() == "9"


def test_force_and_a_corrupt_state_file_run_everything(config: PipelineConfig, calls: list[str]) -> None:
    _run(config)
    assert _run(config, force=True) == [True, True]
    (config.work_dir / STATE_FILE).write_text("{not json")
    assert _run(config) == [True, True]


def test_a_state_file_of_version_1_runs_everything_once(config: PipelineConfig, calls: list[str]) -> None:
    """Version 1 recorded sha256 digests: its records cannot be compared with today's, so the stages run again."""
    import json

    _run(config)
    state = json.loads((config.work_dir / STATE_FILE).read_text())
    assert state["version"] == 2
    state["version"] = 1
    (config.work_dir / STATE_FILE).write_text(json.dumps(state))
    assert _run(config) == [True, True]
    assert _run(config) == [False, False]


def test_a_stage_refusal_names_the_stage_and_keeps_what_ran_before(config: PipelineConfig, calls: list[str]) -> None:
    from binio.errors import InferError
    from infer.pipeline._runner import StageError

    stages = runner_module.STAGE_FUNCTIONS  # the `calls` fixture's own dict
    count = stages["count"]

    def refuse(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
        raise InferError("upper.txt: not a number", hint="count wants digits", exit_code=3)

    stages["count"] = (count[0], refuse)
    with pytest.raises(StageError) as caught:
        _run(config)
    assert (caught.value.message, caught.value.hint, caught.value.exit_code) == (
        "count: upper.txt: not a number", "count wants digits", 3)
    stages["count"] = count
    assert _run(config) == [False, True]  # upper's record was saved before count refused


def test_a_re_run_reads_no_file_of_an_unchanged_folder_and_keeps_it_as_one_record(
        config: PipelineConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: a stage that reads a folder (dump-bin's images) is skipped on a re-run that reads none of its files;
    the state file keeps the folder as one record, not an entry per file."""
    import infer.pipeline._digests as digests

    images = config.path.parent / "images"
    images.mkdir()
    old = time.time() - 60
    for index in range(30):
        (images / f"{index:03d}.png").write_bytes(bytes([index]) * 8)
        os.utime(images / f"{index:03d}.png", (old, old))

    def plan(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StagePlan:
        return StagePlan("list", (images,), {}, ("list",))

    def run(config: PipelineConfig, work: WorkLayout, facts: Facts) -> StageDone:
        (work.root / "list.txt").write_text("\n".join(sorted(os.listdir(images))))
        return StageDone("listed", (work.root / "list.txt",))

    monkeypatch.setattr(runner_module, "STAGE_FUNCTIONS", {"list": (plan, run)})
    read: list[str] = []
    digest_file = digests.digest_file

    def counted(algorithm: str, path: str) -> str:
        read.append(str(path))
        return digest_file(algorithm, path)

    monkeypatch.setattr(digests, "digest_file", counted)
    assert [s.ran for s in run_pipeline(config, stages=("list",)).stages] == [True]
    assert len(read) == 31  # the images and the list written
    state = json.loads((config.work_dir / STATE_FILE).read_text())
    assert list(state["folders"]) == [str(images)] and not any(str(images) in key for key in state["files"])
    read.clear()
    assert [s.ran for s in run_pipeline(config, stages=("list",)).stages] == [False]
    assert not any(path.startswith(str(images)) for path in read)  # (list.txt, just written, may be read again)

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
from infer.pipeline._state import STATE_FILE, DigestCache, digest_path
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


def test_digest_of_a_folder_follows_names_and_contents(tmp_path: Path) -> None:
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"1")
    first = digest_path(folder)
    (folder / "a.png").write_bytes(b"2")
    second = digest_path(folder)
    (folder / "a.png").rename(folder / "b.png")
    third = digest_path(folder)
    assert len({first, second, third}) == 3
    assert digest_path(tmp_path / "absent") == ""


def test_digests_recorded_are_trusted_while_a_file_keeps_its_size_time_and_inode(tmp_path: Path) -> None:
    """Issue 42: a re-run with nothing to do decides from the digests it recorded (make's and dvc's rule), not by
    reading every file again: a folder of many files is read once, then only what changed, and a file changed
    within the clock's reach of its digest (same size, maybe the same time) is read until its time is older."""
    folder = tmp_path / "images"
    folder.mkdir()
    old = time.time() - 60
    for index in range(200):
        (folder / f"{index:04d}.png").write_bytes(bytes([index % 256]) * 64)
        os.utime(folder / f"{index:04d}.png", (old, old))
    cache = DigestCache()
    first = digest_path(folder, cache)
    assert cache.read == 200 and first == digest_path(folder)  # the same digest a run without records takes
    again = DigestCache.from_json(json.loads(json.dumps(cache.to_json())))  # as the state file keeps it
    assert digest_path(folder, again) == first and again.read == 0
    changed = folder / "0007.png"
    changed.write_bytes(b"\xff" * 64)  # same size, new bytes, a time of now
    second = digest_path(folder, again)
    assert second != first and second == digest_path(folder) and again.read == 1
    assert digest_path(folder, again) == second and again.read == 2  # too recent to trust: read once more
    os.utime(changed, (old, old))
    assert digest_path(folder, again) == second and again.read == 3  # its time changed: read, then trusted
    assert digest_path(folder, again) == second and again.read == 3


def test_a_state_files_recorded_digests_that_are_not_what_it_writes_make_their_files_be_read(tmp_path: Path) -> None:
    """An entry is checked when its file is looked at: one that is not what the cache writes (fields missing, not
    whole numbers, not text) or that names another size, time or inode is not trusted, and the file is read."""
    path = tmp_path / "a.png"
    path.write_bytes(b"x" * 64)
    old = time.time_ns() - 60_000_000_000
    os.utime(path, ns=(old, old))
    status = os.stat(path)
    named = f"{status.st_size}:{status.st_mtime_ns}:{status.st_ino}"
    good = f"{named}:{'ab' * 16}:{time.time_ns()}"
    assert DigestCache.from_json({str(path): good}).digest(path) == "ab" * 16  # trusted, not read
    for bad in (f"{named}:{'ab' * 16}", f"{named}::{time.time_ns()}", f"{named}:{'ab' * 16}:x",
                f"{named}:{'ab' * 16}:1.5", f"{named}:{'ab' * 16}:{old}", f"1{named}:{'ab' * 16}:{time.time_ns()}",
                ["x"], None, 7):
        cache = DigestCache.from_json({str(path): bad})
        assert cache.digest(path) == digest_path(path) and cache.read == 1, bad
    assert DigestCache.from_json([good]).entries == {}


def test_a_folders_digest_is_the_one_a_walk_with_pathlib_takes(tmp_path: Path) -> None:
    """The listing is made with os.scandir; what it lists, in which order, is what Path.rglob and is_file give
    (hidden files, a link to a file; not a link to a folder), so digests recorded before stay valid."""
    from binio.digest import BIN_DIGEST, digest_bytes, digest_file

    for relative in ("a/b.png", "a-c.png", "a.png", "z/.hidden", "A/x", "a/b/c/d.txt"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(relative)
    (tmp_path / "link.png").symlink_to(tmp_path / "a.png")
    (tmp_path / "linked").symlink_to(tmp_path / "a")
    by_pathlib = "".join(f"{item.relative_to(tmp_path).as_posix()}\0{digest_file(BIN_DIGEST, item)}\n"
                         for item in sorted(p for p in tmp_path.rglob("*") if p.is_file()))
    assert digest_path(tmp_path) == "dir:" + digest_bytes(BIN_DIGEST, by_pathlib.encode())
    assert digest_path(tmp_path, DigestCache()) == digest_path(tmp_path)


def test_a_digest_taken_too_soon_after_a_change_is_taken_again_when_the_state_is_saved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: the first re-run after a run read again every file a stage wrote in the last RACY_NS before its
    digest was taken (100 MB at 50,000 images). Saving the state takes such a digest again once the change is older
    than RACY_NS, so the re-run reads nothing; a file changed since is left for the next run to read."""
    import infer.pipeline._state as state

    monkeypatch.setattr(state, "RACY_NS", 300_000_000)
    written, changed = tmp_path / "written.bin", tmp_path / "changed.bin"
    written.write_bytes(b"\x01" * 64)
    changed.write_bytes(b"\x02" * 64)
    cache = DigestCache()
    digest = cache.digest(written)
    cache.digest(changed)
    cache.settle()
    assert cache.read == 2  # too recent: nothing taken again yet
    time.sleep(0.4)
    changed.write_bytes(b"\x03" * 65)
    cache.settle()
    assert cache.read == 3  # the file written, not the file changed since
    again = DigestCache.from_json(json.loads(json.dumps(cache.to_json())))
    assert again.digest(written) == digest and again.read == 0
    assert again.digest(changed) == digest_path(changed) and again.read == 1

"""`infer run --dump`: one batch run again with the NPU's dump on, its dump kept beside the run's outputs.

The dump is asked for as each tool takes it: an ``acl.json`` with a ``dump`` section (CANN's model dump
configuration: ``dump_list`` naming the model, ``dump_path``, ``dump_mode``). msame reads ``./acl.json`` from the
folder it runs in whenever one is there (Ascend/tools msame ``src/sample_process.cpp`` InitResource, commit
9d6da90), so it runs in the dump folder; its own ``--dump true`` would write another acl.json over ours, fixed to
``dump_mode: output``. ais_bench takes the file by ``--acl_json_path``, which overrides its ``--dump``
(``ais_bench/infer/miscellaneous.py`` get_acl_json_path, same commit; msit 42a9c80's benchmark the same).

One step: CANN dumps every execution of the model, and its documentation advises one inference while dumping
(``dump_step`` is for training, "推理场景无需配置"), so the dump start runs the tool on one batch alone: the first,
or ``--dump-batch``. Its outputs are dropped (the run's own start writes them); the dump lands in
``OUT/<timestamp>/dump/{time}/{device}/{model_name}/{model_id}/{step}/`` and run.json's ``dump`` says which batch it
is of, which is what ``compare --npu-dump`` needs.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

from binio.atomic import write_json_atomic
from binio.manifest import DatasetManifest
from infer.run._preflight import input_for
from infer.run._runners.tool import ToolRunner
from infer.run.dump_record import ACL_JSON, DUMP_FOLDER, DumpRecord
from infer.run.options import RunError, RunOptions


def acl_json_dump(model_name: str, dump_path: Path, mode: str) -> dict[str, object]:
    """acl.json's model dump configuration (CANN's "Preparing Dump Data of an Offline Model")."""
    return {"dump": {"dump_list": [{"model_name": model_name}], "dump_path": str(dump_path), "dump_mode": mode}}


def dump_model_name(om: Path) -> str:
    """The name acl.json's dump_list gives the model: its file name less the extension (msame's Utils::modelName
    and CANN's documentation for a model loaded from a file; GE dumps only the model of that name)."""
    return Path(om).stem


def _single_batch(manifest: DatasetManifest, runner: ToolRunner, stem: str, folder: Path) -> list[Path]:
    """One folder per model input, holding the batch `stem` alone under its own file name (the tools pair the
    inputs' files by name)."""
    dirs = []
    for index, spec in enumerate(runner.inputs):
        item = input_for(manifest, spec)
        entry = next(e for e in item.files if Path(e.name).stem == stem)
        target = folder / str(index) / entry.name
        target.parent.mkdir(parents=True, exist_ok=True)
        source = manifest.file_path(item, entry)
        try:
            os.link(source, target)  # the bytes the run reads, not a copy of them
        except OSError:
            shutil.copyfile(source, target)
        dirs.append(target.parent.resolve())
    return dirs


def _dump_files(dump_path: Path) -> list[Path]:
    """The files the tool left under the dump path (its own acl.json aside): reading them is compare's and
    bin-info's business (atc_wrap.ascend_files.npu_dump), which run does not import."""
    return [Path(folder) / name for folder, _, names in os.walk(dump_path) for name in names
            if Path(folder) != dump_path or name != ACL_JSON]


def dump_one_batch(runner: ToolRunner, manifest: DatasetManifest, run_folder: Path,
                   options: RunOptions) -> DumpRecord:
    """Runs the batch `options.dump_batch` (default the first) once with the dump on; the record of what it left."""
    stems = manifest.stems
    stem = options.dump_batch or (stems[0] if stems else "")
    if stem not in stems:
        raise RunError(f"--dump-batch {stem}: {manifest.path} has no such batch (its batches are {stems[0]} to "
                       f"{stems[-1]})" if stems else f"--dump: {manifest.path} holds no batch")
    dump_path = (run_folder / DUMP_FOLDER).resolve()
    dump_path.mkdir(parents=True, exist_ok=True)
    model_name = dump_model_name(runner.om)
    acl_json = dump_path / ACL_JSON
    write_json_atomic(acl_json, acl_json_dump(model_name, dump_path, options.dump_mode))
    work = (run_folder / f".{runner.tool}-dump-work").resolve()
    dumping = copy.copy(runner)
    # one execution: no loop, no warm-up (ais_bench warms up once by default, and a warm-up run is dumped too)
    dumping.om, dumping.acl_json, dumping.loop, dumping.warmup = runner.om.resolve(), acl_json, 1, 0
    try:
        run = dumping.run_folders(_single_batch(manifest, runner, stem, work / "inputs"), [stem], work / "out")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = _dump_files(dump_path)
    if not found:
        raise RunError(f"{runner.tool} wrote no dump file under {dump_path} for batch {stem}",
                       hint=f"GE dumps only the model {acl_json} names (dump_list model_name {model_name!r}, the om's "
                            "file name less its extension); see the tool's log (-vv)")
    steps = sorted({str(path.parent.relative_to(dump_path)) for path in found})
    return DumpRecord(folder=DUMP_FOLDER, mode=options.dump_mode, stem=stem, model_name=model_name,
                      acl_json=f"{DUMP_FOLDER}/{ACL_JSON}", step_folders=tuple(steps), files=len(found),
                      tool_command=run.command)


"""`infer run`: the bins through one backend, into one layout: ``OUT/<timestamp>/<stem>_output_<i>.bin`` + run.json.

The backend comes from the contract (an .om goes to msame, or ais_bench on request; an ONNX stand-in to ONNX
Runtime; ``tf`` runs the frozen pb). Every bin's size is checked before the backend starts, its digest as it is
read (or beside the tool that reads it). Outputs are written one batch at a time under temporary names, and
run.json says how far the run got, so an interrupted run leaves valid outputs and a record marked incomplete.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from binio.binfile import sha256_file
from binio.gears import gear_label
from binio.lock import folder_lock
from binio.manifest import DatasetManifest, dataset_folder
from infer.contract import ModelContract, load_contract
from infer.remote.options import remote_given
from infer.run._batches import Progress, run_batches
from infer.run._gear import dataset_gear, gear_run
from infer.run._preflight import dataset_if_any, preflight
from infer.run._runners.base import BaseRunner
from infer.run.layout import timestamp_folder_name
from infer.run.options import BACKENDS, TOOL_BACKENDS, Backend, RunError, RunOptions, check_dump
from infer.run.record import RunRecord
from infer.run.result import RunResult

if TYPE_CHECKING:
    from infer.run._runners.tool import ToolRunner

log = logging.getLogger(__name__)

_BACKENDS_OF_FILE: dict[str, tuple[Backend, ...]] = {".pb": ("tf",), ".onnx": ("onnxrt",),
                                                     ".om": ("msame", "ais_bench")}
_DEFAULT_OF_TARGET: dict[str, Backend] = {"om": "msame", "onnx": "onnxrt"}


def resolve_model(model: ModelContract | Path | str) -> tuple[ModelContract, str | None]:
    """The contract for MODEL (a contract, a model.json, its folder, or an .om/.onnx/.pb beside one) and the
    file's kind."""
    if isinstance(model, ModelContract):
        return model, None
    model = Path(model)
    if model.is_dir() or model.suffix == ".json":
        return load_contract(model), None
    if model.suffix not in _BACKENDS_OF_FILE:
        raise RunError(f"{model}: not a model this runs (expected model.json, .om, .onnx or .pb)")
    if not model.is_file():
        raise RunError(f"{model}: no such model")
    beside = model.parent / "model.json"
    if not beside.is_file():
        raise RunError(f"{model}: no model.json beside it to say its inputs and outputs",
                       hint="run infer freeze (and infer convert), which write it")
    contract = load_contract(beside)
    described = contract.pb_path if model.suffix == ".pb" else contract.converted_path
    if described is None or described.resolve() != model.resolve():
        raise RunError(f"{model}: {beside} describes {described.name if described else 'no converted model'}, "
                       f"not this file", hint="pass the model.json, or re-run infer convert for this model")
    return contract, model.suffix


def choose_backend(contract: ModelContract, requested: str | None, kind: str | None, *,
                   remote: bool = False) -> Backend:
    if requested is not None and requested not in BACKENDS:
        raise RunError(f"--backend {requested}: expected one of {', '.join(BACKENDS)}")
    if remote and requested is not None and requested not in TOOL_BACKENDS:
        raise RunError(f"--host with --backend {requested}: the host runs msame or ais_bench on an om; "
                       f"{requested} runs here", hint="leave out --host, or --backend msame / ais_bench")
    requested = cast("Backend | None", requested)
    if kind is not None:
        allowed = _BACKENDS_OF_FILE[kind]
        if requested is not None and requested not in allowed:
            raise RunError(f"--backend {requested} cannot run a {kind} file (it takes {' or '.join(allowed)})",
                           hint="pass the model.json to pick the backend freely")
        return requested or allowed[0]
    if requested is not None:
        return requested
    if remote:  # the host runs an om (and `make_runner` refuses a model that has none)
        return "msame"
    if contract.converted is None:
        log.info("%s: not converted; running the frozen pb on TensorFlow", contract.path)
        return "tf"
    return _DEFAULT_OF_TARGET.get(contract.converted.target, "tf")


def make_runner(contract: ModelContract, backend: Backend, options: RunOptions, *,
                dataset: DatasetManifest | None = None) -> BaseRunner:
    """The runner for `backend`, not yet activated. With the `dataset`, TensorFlow takes an AIPP dataset's
    uint8 bins through their declared preprocessing (`infer.run._runners.declared`), and msame or ais_bench only
    bins that fit the om's own input descriptors (`infer.model_om.check_om_bins`).

    Each backend's modules are imported here, for that backend only: a plain ONNX Runtime run has no use for the
    tool runners or AIPP's preprocessing (about 25 ms of a command's start)."""
    if remote_given(options.remote) and backend not in TOOL_BACKENDS:
        raise RunError(f"--host with the {backend} backend: the host runs msame or ais_bench on an om; {backend} "
                       "runs here", hint="infer convert --target om --host HOST makes the om there")
    if backend == "tf":
        from infer.run._runners.declared import with_declared_preprocessing
        from infer.run._runners.tensorflow import TensorFlowRunner

        runner = TensorFlowRunner(contract, threads=options.threads, allow_host_ops=options.allow_host_ops)
        return with_declared_preprocessing(runner, contract, dataset)
    if backend == "onnxrt":
        from infer.run._runners.onnxrt import OnnxRuntimeRunner

        return OnnxRuntimeRunner.from_contract(contract, threads=options.threads, device=options.device)

    from infer.model_om import check_om_bins
    from infer.run._runners.ais_bench import AisBenchRunner
    from infer.run._runners.msame import MsameRunner

    tool = MsameRunner if backend == "msame" else AisBenchRunner
    tool_runner = tool.from_contract(contract, device=options.device, loop=options.loop, warmup=options.warmup,
                                     timeout=options.timeout, planned=options.dry_run)
    if remote_given(options.remote):  # the tool runs on an Ascend host, over SSH
        from infer.remote import ToolsOnHost

        assert options.remote is not None
        tool_runner.place = ToolsOnHost(options.remote, contract, dataset)
    if dataset is not None:  # the om's own input descriptors, before the run's checks against the runner's inputs
        check_om_bins(dataset, contract)
    return tool_runner


def model_file(contract: ModelContract, backend: Backend) -> tuple[Path, str]:
    """The file `backend` runs, with the sha256 the contract records for it."""
    if backend == "tf" or contract.converted is None:
        return contract.pb_path, contract.pb_sha256
    return contract.folder / contract.converted.path, contract.converted.sha256


def warn_if_made_for_another(manifest: DatasetManifest, contract: ModelContract, options: RunOptions,
                             running: Path) -> None:
    """Warns when dataset.json names a model other than this contract's pb or converted model (or the one the
    caller says the bins were made for): its bins may hold another model's dtypes or preprocessing."""
    known = {contract.pb_sha256, contract.converted.sha256 if contract.converted else "", options.bins_made_for}
    if manifest.model_sha256 and manifest.model_sha256 not in known:  # bins made for the om feed the pb too
        log.warning("%s: made for another model (sha256 %s), running %s", manifest.path, manifest.model_sha256[:12],
                    running)


def make_run_folder(out: Path) -> Path:
    """A new ``OUT/<timestamp>`` folder; refuses an output root that cannot be written."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        while True:
            folder = out / timestamp_folder_name(datetime.now())
            try:
                folder.mkdir()
                return folder
            except FileExistsError:
                continue
    except OSError as exc:
        raise RunError(f"{out}: cannot create the run folder here ({exc.strerror or exc})",
                       hint="choose a writable -o") from None


@dataclass(frozen=True)
class PreparedRun:
    """A run checked and ready, nothing started: what a run and a dry run (`infer.run._plan`) both begin with."""

    contract: ModelContract
    backend: Backend
    runner: BaseRunner
    manifest: DatasetManifest
    running: tuple[Path, str]  # the model file and its sha256
    gear: str = ""  # the dataset's gear (``batch 4``) of a model with gears; "" otherwise


def prepare_run(model: ModelContract | Path | str, bins: DatasetManifest | Path | str,
                options: RunOptions) -> PreparedRun:
    """The options, model, backend and every bin checked, the runner made but not activated."""
    options.check()
    contract, kind = resolve_model(model)
    backend = choose_backend(contract, options.backend, kind, remote=remote_given(options.remote))
    check_dump(options, backend)
    dataset = dataset_if_any(dataset_folder(bins))
    runner = make_runner(contract, backend, options, dataset=dataset)
    # The golden run feeds the frozen pb the converted model's bins: float16 ones are widened, exactly.
    manifest = preflight(dataset_folder(bins), runner.inputs, widen=backend == "tf", loaded=dataset,
                         gears=None if backend == "tf" else contract.gears)  # the pb takes any shape
    running = model_file(contract, backend)
    warn_if_made_for_another(manifest, contract, options, running[0])
    gear = ""
    if backend != "tf" and contract.gears is not None:  # the gear is the bins', checked; the pb takes any shape
        gear = gear_label(contract.gears.kind, dataset_gear(contract.gears, manifest))
    if backend in TOOL_BACKENDS:
        # the tool runners' path only (make_runner imported them for it)
        from infer.run._runners.tool import ToolRunner

        assert isinstance(runner, ToolRunner)
        runner.use_gear(gear_run(contract, manifest, runner.inputs, runner.outputs))
    return PreparedRun(contract=contract, backend=backend, runner=runner, manifest=manifest, running=running,
                       gear=gear)


def run_plain(model: ModelContract | Path | str, bins: DatasetManifest | Path | str, out: Path | str,
              options: RunOptions | None = None, *, progress: Progress | None = None) -> RunResult:
    """Runs every batch of `bins` through `model` and writes ``out/<timestamp>/`` (outputs + run.json)."""
    options = options or RunOptions()
    prepared = prepare_run(model, bins, options)
    runner = prepared.runner
    runner.activate()  # before the run folder exists: a missing tool leaves nothing behind
    try:
        with folder_lock(Path(out), command="run"):
            return _run(runner, prepared.manifest, prepared.running, prepared.backend, Path(out), options, progress)
    finally:
        runner.deactivate()


def _run(runner: BaseRunner, manifest: DatasetManifest, running: tuple[Path, str], backend: Backend, out: Path,
         options: RunOptions, progress: Progress | None) -> RunResult:
    folder = make_run_folder(out)
    record = RunRecord.begin(folder, backend=backend, model=running, manifest=manifest,
                             dataset_sha256=sha256_file(manifest.path), outputs=runner.outputs, options=options,
                             device=runner.device).save()
    log.info("running %d batches of %s on %s into %s", manifest.file_count, manifest.root, backend, folder)
    record = runner.take_dataset(_Feed(manifest, record, options, progress))
    return RunResult(folder=folder, record=record)


@dataclass(frozen=True)
class _Feed:
    """One run's dataset, for the runner to take its own way (`BaseRunner.take_dataset`)."""

    manifest: DatasetManifest
    record: RunRecord
    options: RunOptions
    progress: Progress | None

    def batch_by_batch(self, runner: BaseRunner) -> RunRecord:
        return run_batches(runner, self.manifest, self.record, loop=self.options.loop, warmup=self.options.warmup,
                           progress=self.progress)

    def whole_folders(self, runner: ToolRunner) -> RunRecord:
        from infer.run._folders import run_folders  # the tool runners' path only

        record = self.record
        if self.options.dump:  # the dump's own start first: a dump that fails leaves no outputs to mistake
            from infer.run._dump import dump_one_batch  # --dump's path only

            record = replace(record, dump=dump_one_batch(runner, self.manifest, record.folder, self.options)).save()
        return run_folders(runner, self.manifest, record, self.progress)

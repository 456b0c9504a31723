"""What msame and ais_bench share: an .om run by an external tool over whole folders of bins at once.

`run_folders` is the fast path `infer run` takes (one tool start for the whole dataset); `infer` writes one batch
to a scratch folder and runs the tool on it, so these runners honour the same contract as the in-process ones.
"""

from __future__ import annotations

import os
import tempfile
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Protocol, TypeVar

import numpy as np

from binio.binfile import read_bin, write_raw
from binio.defaults import DEFAULT_TOOL_TIMEOUT_S
from binio.manifest import bin_file_name
from binio.process import ToolResult, quote_command, run_tool
from binio.spec import TensorSpec
from infer.contract import ModelContract
from infer.model_om import om_descriptors
from infer.remote.record import RemoteRecord
from infer.run._gear import GearRun
from infer.run._latency import mean, percentile
from infer.run._runners.base import BaseRunner, DatasetFeed, RunnerError

STAND_IN = "the stand-in is --backend onnxrt after infer convert --target onnx"


def folder_argv(command: Sequence[str], om: PurePath, input_dirs: Sequence[PurePath], out: PurePath, *,
                device: int | None, loop: int) -> list[str]:
    """`command` with the arguments msame and ais_bench share: model, input folders (paired by file name),
    output folder, BIN output, and the device and loop count when set. The one place their argv is built."""
    argv = [*command, "--model", str(om), "--input", ",".join(str(d) for d in input_dirs),
            "--output", str(out), "--outfmt", "BIN"]
    if device is not None:
        argv += ["--device", str(device)]
    if loop > 1:
        argv += ["--loop", str(loop)]
    return argv


@dataclass(frozen=True)
class ToolTimings:
    """What the tool itself reported about its speed; None where it did not say."""

    mean_ms: float | None
    p50_ms: float | None = None
    p99_ms: float | None = None
    per_batch_ms: tuple[float, ...] = ()
    throughput: float | None = None  # samples/s, as the tool counts them


@dataclass(frozen=True)
class ToolRun:
    """One tool run over folders of bins: its output files by input stem, in output order."""

    command: tuple[str, ...]
    folder: Path  # the tool's own (timestamp) output folder
    files: dict[str, tuple[Path, ...]]
    timings: ToolTimings
    seconds: float


def timings_from_batches(per_batch_ms: Sequence[float], mean_ms: float | None) -> ToolTimings:
    if not per_batch_ms:
        return ToolTimings(mean_ms=mean_ms)
    return ToolTimings(mean_ms=mean_ms if mean_ms is not None else mean(per_batch_ms),
                       p50_ms=percentile(per_batch_ms, 50), p99_ms=percentile(per_batch_ms, 99),
                       per_batch_ms=tuple(per_batch_ms))


def failure_line(result: ToolResult) -> str | None:
    """The first ``[ERROR]`` line: these tools print one and may still exit 0."""
    return next((line.strip() for line in result.lines if "[ERROR]" in line), None)


class ToolPlace(Protocol):
    """Where a tool runner's tool runs when not on this machine: an Ascend host over SSH (`infer.remote`), whose
    tool is found there, whose inputs are sent, and whose output folder comes back into the local work folder."""

    name: str  # the host, as every message names it

    def activate(self, runner: ToolRunner) -> None:
        """Connects, and refuses a host without the tool (or without the om's chip, or the device asked)."""
        ...

    def deactivate(self) -> None: ...

    def execute(self, runner: ToolRunner, input_dirs: Sequence[Path], work: Path) -> ToolResult:
        """The runner's argv run there over `input_dirs`, the tool's output folder fetched into `work`."""
        ...

    def record(self) -> RemoteRecord | None:
        """What run.json records of where it ran (None before it ran)."""
        ...


_Tool = TypeVar("_Tool", bound="ToolRunner")
_Done = TypeVar("_Done")
# A dataset feed whose whole folders go to a tool runner: what `ToolRunner.take_dataset` hands itself to.
FolderFeed = DatasetFeed[_Done, "ToolRunner"]


class ToolRunner(BaseRunner):
    """An .om run by an external tool; subclasses build the argv and read the tool's layout."""

    tool = ""

    def __init__(
        self,
        om: Path,
        inputs: tuple[TensorSpec, ...],
        outputs: tuple[TensorSpec, ...],
        *,
        device: int | None = None,
        loop: int = 1,
        warmup: int = 0,
        timeout: float = DEFAULT_TOOL_TIMEOUT_S,
    ) -> None:
        super().__init__(inputs, outputs)
        self.om = Path(om)
        self.device_id = device
        self.loop = loop
        self.warmup = warmup
        self.timeout = timeout
        self.acl_json: Path | None = None  # a dump start's configuration (infer.run._dump), given as the tool takes it
        self.gear: GearRun | None = None  # the gear of a model with gears the tool runs at (`use_gear`)
        self.place: ToolPlace | None = None  # an Ascend host the tool runs on (--host); None: here

    @classmethod
    def from_contract(cls: type[_Tool], contract: ModelContract, *, device: int | None = None, loop: int = 1,
                      warmup: int = 0, timeout: float = DEFAULT_TOOL_TIMEOUT_S, planned: bool = False) -> _Tool:
        """`planned` (a dry run) takes a model converted for the stand-in too: its command line names the om
        `infer convert --target om` writes beside it, which is what a user runs on the Ascend server."""
        converted = contract.converted
        if planned and converted is not None and converted.target != "om":
            om = (contract.folder / converted.path).with_suffix(".om")
            return cls(om, converted.inputs, converted.outputs, device=device, loop=loop, warmup=warmup,
                       timeout=timeout)
        if converted is None or converted.target != "om":
            found = "nothing" if converted is None else f"an {converted.target} model"
            raise RunnerError(f"{contract.path}: the {cls.backend} backend runs an .om, convert produced {found}",
                              hint="run infer convert (ATC) for an .om, or use --backend onnxrt for the stand-in")
        contract.check_converted_unchanged()
        # The om's own descriptors where it has readable ones: its dtypes, and its order of inputs, which is the
        # order the tool takes the input folders in.
        own = om_descriptors(contract)
        inputs, outputs = (own.fed_order, own.output_specs) if own else (converted.inputs, converted.outputs)
        return cls(contract.folder / converted.path, inputs, outputs, device=device, loop=loop, warmup=warmup,
                   timeout=timeout)

    @property
    def device(self) -> str:
        on = f" on {self.place.name}" if self.place is not None else ""
        return f"{self.tool} device {self.device_id or 0}{on}"

    @property
    def where(self) -> str:
        """What starts every message of a tool that runs elsewhere: ``ascend01: ``; "" here."""
        return f"{self.place.name}: " if self.place is not None else ""

    def take_dataset(self, feed: FolderFeed[_Done]) -> _Done:
        """A tool takes the dataset's folders in one start (`run_folders`): one start per batch would cost more
        than the batch."""
        return feed.whole_folders(self)

    def check_available(self) -> None:
        """Looks for the tool and the .om (what activating a tool runner does, at no cost)."""
        self.activate()
        self.deactivate()

    def activate_impl(self) -> None:
        if not self.om.is_file():
            raise RunnerError(f"{self.om}: no such .om model")
        if self.place is not None:
            self.place.activate(self)
        else:
            self.find()

    def deactivate_impl(self) -> None:
        if self.place is not None:
            self.place.deactivate()

    def execute(self, input_dirs: Sequence[Path], work: Path, *, cwd: Path | None = None) -> ToolResult:
        """The tool over `input_dirs`, writing under `work`: here through the one subprocess wrapper, in `cwd`; or on
        the host its place names, whose output folder comes back into `work`."""
        if self.place is not None:
            return self.place.execute(self, input_dirs, work)
        return run_tool(self.argv(input_dirs, work), timeout=self.timeout, cwd=cwd)

    @abstractmethod
    def find(self) -> None:
        """Refuses, saying so plainly and naming the stand-in, when the tool is not installed."""

    @abstractmethod
    def run_folders(self, input_dirs: Sequence[Path], stems: Sequence[str], work: Path) -> ToolRun:
        """Runs the tool over every file of `input_dirs` (paired by name), writing under `work`."""

    @abstractmethod
    def launcher(self, *, planned: bool = False) -> list[str]:
        """What starts the tool: as found here once activated, or, `planned` (a dry run), by the name a user types
        on the Ascend server."""

    def tool_options(self, acl_json: PurePath | None = None) -> list[str]:
        """The tool's own options after the shared ones (ais_bench's warm-up and acl.json: `acl_json`, the run's
        acl.json as the tool names it)."""
        return []

    def use_gear(self, gear: GearRun | None) -> None:
        """Runs at `gear` (a model with gears): its flags on every start, its outputs' shapes at it."""
        self.gear = gear
        if gear is not None:
            self._outputs = gear.outputs

    def argv(self, input_dirs: Sequence[PurePath], out: PurePath, *, planned: bool = False, om: PurePath | None = None,
             acl_json: PurePath | None = None) -> list[str]:
        """The tool's whole command line over `input_dirs`, writing under `out`: what `run_folders` runs and what
        `infer run --dry-run` prints. `om` and `acl_json` name those files where they are elsewhere (a host)."""
        return [*folder_argv(self.launcher(planned=planned), om or self.om, input_dirs, out, device=self.device_id,
                             loop=self.loop), *(self.gear.flags if self.gear else ()),
                *self.tool_options(acl_json or self.acl_json)]

    def not_installed(self, how: str) -> RunnerError:
        return RunnerError(f"{self.where}{self.tool} is not installed ({how}); {STAND_IN}",
                           hint="run on an Ascend host with the CANN toolkit set up (source set_env.sh)")

    def failed(self, result: ToolResult, why: str) -> RunnerError:
        return RunnerError(f"{self.where}{self.tool} failed (exit {result.returncode}): {why}",
                           hint=f"command: {quote_command(result.argv)}; run it by hand, or -vv to see its output")

    def infer_impl(self, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        with tempfile.TemporaryDirectory(prefix=f"infer-{self.tool}-") as scratch:
            root = Path(scratch)
            stem = bin_file_name(0).removesuffix(".bin")
            dirs = []
            for index, spec in enumerate(self.inputs):
                folder = root / "inputs" / str(index)
                write_raw(folder / bin_file_name(0), np.asarray(feeds[spec.name]))
                dirs.append(folder)
            run = self.run_folders(dirs, [stem], root / "out")
            for path, spec in zip(run.files[stem], self.outputs, strict=True):
                self.trim_to_gear(path, spec)
            return [np.array(read_bin(path, spec)) for path, spec in zip(run.files[stem], self.outputs, strict=True)]

    def trim_to_gear(self, path: Path, spec: TensorSpec) -> int | None:
        """Cuts an output file the tool wrote larger than the gear's output to the gear's size, which comes first
        in it (msame writes its whole buffer, sized for the largest gear, for image-size and dims gears); the size
        it had, or None where nothing was cut (a static model, a file of the right size or smaller, which the size
        check refuses)."""
        if self.gear is None:
            return None
        kept = spec.nbytes()
        written = path.stat().st_size
        if written <= kept:
            return None
        os.truncate(path, kept)
        return written

    def collect(self, folder: Path, stems: Sequence[str], result: ToolResult, name: str) -> dict[str, tuple[Path, ...]]:
        """The output files of every stem, named by `name` (a format with {stem} and {index})."""
        files: dict[str, tuple[Path, ...]] = {}
        for stem in stems:
            paths = tuple(folder / name.format(stem=stem, index=i) for i in range(len(self.outputs)))
            missing = next((p for p in paths if not p.is_file()), None)
            if missing is not None:
                raise self.failed(result, f"it reported success but wrote no {missing}")
            files[stem] = paths
        return files

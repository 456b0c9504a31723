"""What `infer run` is asked to do: one backend's options (RunOptions) and how a run is cut into shards (ScaleOptions).

Kept apart from the code that runs, so the command line, the pipeline file and the Python API decode into the same
types without importing the runners.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from binio.defaults import DEFAULT_TOOL_TIMEOUT_S
from binio.errors import InferError
from binio.limits import check_count, check_seconds, check_workers
from binio.vocabulary import values_of
from infer._option_fields import allow_host_ops_setting, setting
from infer.remote.options import RemoteOptions

DumpMode = Literal["output", "input", "all"]  # acl.json's dump_mode
DUMP_MODES: tuple[str, ...] = values_of(DumpMode)

# The engines a sharded run may use (`infer.run._engines`): named here, where --engine is checked, so checking the
# options imports no engine (they import the worker, which imports numpy).
EngineName = Literal["local", "ray"]
ENGINES: tuple[str, ...] = values_of(EngineName)
# The backends a run may use; run.json names one of them (`infer.run.record` refuses any other).
Backend = Literal["onnxrt", "tf", "msame", "ais_bench"]
BACKENDS: tuple[str, ...] = values_of(Backend)


class RunError(InferError):
    """A model, backend or output folder `infer run` cannot use."""


MAX_LOOP = 10_000  # runs of each batch: msame's own loop is for a latency figure, as is this


@dataclass(frozen=True)
class RunOptions:
    """In pipeline.toml: [run]."""

    backend: Backend | None = setting(None, unset="auto", short="-b", shown="from what convert made",
                                      help="What runs the model: ONNX Runtime (the stand-in), TensorFlow (the "
                                           "frozen pb), msame or ais_bench (an om, on the NPU).")
    device: int | None = setting(None, shown="the backend's", help="NPU (msame, ais_bench) or GPU (onnxrt) index: "
                                                                   "1 runs on the second.")
    loop: int = setting(1, help="Run each batch this many times; latency is their mean.")
    # the first call of a session builds its kernels: slow, and not what a batch costs
    warmup: int = setting(1, help="Untimed runs of the first batch before timing starts.")
    threads: int | None = setting(None, unset=0, shown="the framework's", help="Intra-op threads (onnxrt, tf).")
    timeout: float = setting(DEFAULT_TOOL_TIMEOUT_S,
                             help="Seconds msame or ais_bench may take for the whole dataset; then they are stopped, "
                                  "with every process they started.")
    dump: bool = setting(False, toml=False, help="Also dump every op's tensors of one batch on the NPU (msame, "
                                                 "ais_bench: acl.json), into OUT/<timestamp>/dump, for compare "
                                                 "--npu-dump.")
    dump_mode: DumpMode = setting("output", toml=False, help="With --dump: which tensors of each op are dumped "
                                                             "(acl.json's dump_mode).")
    dump_batch: str = setting("", toml=False, shown="the first", help="With --dump: the batch dumped, by its files' "
                                                                      "stem (e.g. 000003).")
    dry_run: bool = setting(False, toml=False, help="Print the exact msame or ais_bench command line of each tool "
                                                    "start (for onnxrt and tf, what they would run) and run "
                                                    "nothing, writing nothing.")
    allow_host_ops: bool = allow_host_ops_setting()
    # msame or ais_bench on an Ascend host over SSH: --host and its flags; a pipeline's [remote] table
    remote: RemoteOptions | None = setting(None, toml=False, switch=False, help="in [remote]",
                                           needs=("these say how to reach the Ascend host",
                                                  "add --host [USER@]HOST[:PORT]"))
    # The sha256 of another model whose bins this run takes on purpose (compare's emulated precision runs a model
    # of the same pb on the converted model's bins): no "made for another model" warning for it.
    bins_made_for: str = setting("", toml=False, flag=False)

    def check(self) -> None:
        """Refuses counts out of range, naming the option, before anything is loaded."""
        check_count(self.loop, "--loop", most=MAX_LOOP, why="each batch runs that many times; a latency's mean needs "
                                                            "far fewer")
        check_count(self.warmup, "--warmup", least=0, most=MAX_LOOP, why="untimed runs of the first batch")
        if self.device is not None and self.device < 0:
            raise RunError(f"--device {self.device}: expected a device index, 0 or more")
        check_seconds(self.timeout, "--timeout")
        if self.dump_mode not in DUMP_MODES:
            raise RunError(f"--dump-mode {self.dump_mode}: expected one of {', '.join(DUMP_MODES)}")
        if not self.dump and (self.dump_mode != "output" or self.dump_batch):
            raise RunError(f"{'--dump-batch' if self.dump_batch else '--dump-mode'} without --dump: nothing is "
                           "dumped", hint="add --dump")
        if self.threads is not None and self.threads < 1:
            raise RunError(f"--threads {self.threads}: expected 1 or more (leave it out for the framework's default)")
        if self.threads is not None:
            check_workers(self.threads, "--threads")


TOOL_BACKENDS: tuple[Backend, ...] = ("msame", "ais_bench")  # external tools running an om
DUMP_BACKENDS = TOOL_BACKENDS


def check_dump(options: RunOptions, backend: str, *, sharded: bool = False) -> None:
    """Refuses --dump where no NPU runs the model, and on a sharded run (one batch is dumped, by one start)."""
    if not options.dump:
        return
    if backend not in DUMP_BACKENDS:
        raise RunError(f"--dump with --backend {backend}: an NPU dump comes from msame or ais_bench running an om",
                       hint="the stand-in's tensors are compared by infer compare --layerwise, no dump needed")
    if sharded:
        raise RunError("--dump with shards: the dump is of one batch, run once",
                       hint="run --dump without --devices, --shards, --engine or --resume")


class ScaleOutError(InferError):
    """A sharded run that could not be set up, or whose shards failed after their retries."""


@dataclass(frozen=True)
class ScaleOptions:
    """How a run is cut into shards; command line only (a pipeline's [run] is RunOptions)."""

    devices: tuple[int, ...] = setting((), toml=False, parse=lambda text, flag: parse_devices(text),
                                       help="Shard the batches over these devices, e.g. 0,1,2,3 (one process each).")
    shards: int | None = setting(None, toml=False, shown="one per device or Ray slot", help="Shards to cut.")
    engine: EngineName = setting("local", toml=False, help="Where the shards run: processes here, or Ray tasks.")
    address: str | None = setting(None, toml=False, shown="start a local Ray", help="Ray cluster address.")
    retries: int = setting(1, toml=False, help="Further attempts of a failed shard (sharded runs).")
    resume: bool = setting(False, toml=False,
                           help="Finish the newest unfinished run of this model and dataset under -o.")

    def check(self, options: RunOptions | None = None) -> None:
        """Refuses a sharding no engine can carry out, naming the option; with the run's `options`, also a
        --device given beside --devices."""
        if self.engine not in ENGINES:
            raise ScaleOutError(f"--engine {self.engine}: expected one of {', '.join(ENGINES)}")
        if self.engine == "ray" and options is not None and options.remote is not None and options.remote.host:
            raise ScaleOutError("--host with --engine ray: Ray runs the shards on its cluster's nodes, with their "
                                "own tools", hint="a Ray cluster of Ascend hosts is the path for many machines "
                                                  "(leave out --host); --host is for hosts you reach over SSH")
        if self.engine == "ray" and self.devices:
            raise ScaleOutError("--devices with --engine ray: Ray grants the devices itself",
                                hint="give --shards N (default: one per NPU, or CPU for the stand-in, of the cluster)")
        if self.engine != "ray" and self.address is not None:
            raise ScaleOutError("--address is for --engine ray")
        if self.devices and options is not None and options.device is not None:
            raise ScaleOutError("--device and --devices together: give one", hint="--devices 0 runs on device 0 alone")
        if self.shards is not None and self.shards < 1:
            raise ScaleOutError(f"--shards {self.shards}: expected 1 or more")
        if self.retries < 0:
            raise ScaleOutError(f"--retries {self.retries}: expected 0 or more")

    @property
    def wanted(self) -> bool:
        """Whether a run takes the sharded path at all."""
        return (bool(self.devices) or self.shards is not None or self.engine != "local" or self.resume
                or self.address is not None)


def parse_devices(text: str) -> tuple[int, ...]:
    """``0,1,2,3`` -> (0, 1, 2, 3); refuses anything but distinct non-negative integers."""
    try:
        devices = tuple(int(part) for part in text.replace(" ", "").split(","))
    except ValueError:
        raise ScaleOutError(f"--devices {text}: expected device numbers separated by commas (e.g. 0,1,2,3)") \
            from None
    if any(d < 0 for d in devices) or len(set(devices)) != len(devices):
        raise ScaleOutError(f"--devices {text}: expected distinct device numbers, 0 or more")
    return devices

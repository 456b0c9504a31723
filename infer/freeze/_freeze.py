"""`infer freeze`: a model source -> OUTDIR/model.pb + OUTDIR/model.json, the contract later stages read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from binio.atomic import write_bytes_atomic
from binio.beside import start_beside
from binio.digest import digest_bytes
from binio.errors import OutputExistsError
from binio.output import check_output, removed_if_left_empty
from binio.steps import OnStep, no_steps
from ckpt2pb.freeze import FrozenGraph, freeze_source
from ckpt2pb.inputs import parse_input
from ckpt2pb.source import LoadedSource, load_source
from ckpt2pb.training_mode import TrainingModeOp
from ckpt2pb.verify import Verification
from infer.contract import ModelContract, SourceInfo
from infer.freeze.options import FreezeOptions

PB_NAME = "model.pb"
CONTRACT_NAME = "model.json"


@dataclass(frozen=True)
class FreezeReport:
    contract: ModelContract
    verification: Verification | None
    nodes: int
    stripped_attrs: int
    note: str = ""  # how the source was read, where it was not the usual way
    training_mode: tuple[TrainingModeOp, ...] = ()  # ops of the source's training graph put in inference mode
    batch_suspects: tuple[TrainingModeOp, ...] = ()  # tensors centred by their own mean over axis 0, left as they are


def check_outdir(outdir: Path, force: bool) -> None:
    """Refuses to replace an earlier freeze unless asked: the contract of later stages would silently change."""
    if outdir.exists() and not outdir.is_dir():
        raise OutputExistsError(f"{outdir} is a file; -o names the folder for {PB_NAME} and {CONTRACT_NAME}")
    for name in (PB_NAME, CONTRACT_NAME):
        check_output(outdir / name, force=force)


def _read_from(loaded: LoadedSource, given: Path) -> str:
    """What was read, absolute: the checkpoint prefix a folder (or one of the checkpoint's files) stands for,
    spelt as found (``run_dir/`` for the files ``run_dir/.index``, ``.meta``, ...)."""
    if loaded.kind in ("checkpoint", "meta") and loaded.prefix is not None \
            and loaded.prefix.file(".index").is_file():
        return str(loaded.prefix.resolve())
    return str(given.resolve())


def freeze_model(source: Path | str, outdir: Path | str, options: FreezeOptions | None = None, *,
                 on_step: OnStep = no_steps) -> FreezeReport:
    """Freezes `source` for `options.outputs` and writes the pb and its contract into `outdir`, atomically.
    `on_step` hears each step as it starts (the CLI shows them on a terminal)."""
    options = options or FreezeOptions()
    outdir = Path(outdir)
    check_outdir(outdir, options.force)  # before TensorFlow starts: a refusal should not take seconds

    on_step("importing TensorFlow")
    import tensorflow  # noqa: F401  # started here, where the step says so, not inside the first reader

    requests = tuple(parse_input(text) for text in options.inputs)
    on_step(f"reading {source}")
    loaded = load_source(source, allow_host_ops=options.allow_host_ops)
    frozen = freeze_source(loaded, list(options.outputs), inputs=requests, batch=options.batch,
                           assignments=dict(options.assignments), verify=options.verify, on_step=on_step,
                           allow_host_ops=options.allow_host_ops)
    # The bytes written are hashed as they are written (both release the GIL), not read back from the file.
    hashed = start_beside(lambda: digest_bytes("sha256", frozen.serialized), "freeze-pb-sha256")
    on_step(f"writing {outdir / PB_NAME}")
    with removed_if_left_empty(outdir):  # a refusal here (a full disk) leaves no empty model folder behind
        return _write(outdir, loaded, Path(source), frozen, hashed.result)


def _write(outdir: Path, loaded: LoadedSource, source: Path, frozen: FrozenGraph, sha256: Callable[[], str]
           ) -> FreezeReport:
    had_pb = (outdir / PB_NAME).exists()
    write_bytes_atomic(outdir / PB_NAME, frozen.serialized)
    try:
        return _write_contract(outdir, loaded, source, frozen, sha256)
    except BaseException:
        if not had_pb:  # a pb with no contract is half a freeze: gone with the refusal
            (outdir / PB_NAME).unlink(missing_ok=True)
        raise


def _write_contract(outdir: Path, loaded: LoadedSource, source: Path, frozen: FrozenGraph,
                    sha256: Callable[[], str]) -> FreezeReport:
    import tensorflow as tf

    contract = ModelContract(
        path=outdir / CONTRACT_NAME, pb=PB_NAME, pb_sha256=sha256(),
        source=SourceInfo(path=_read_from(loaded, source), kind=loaded.kind,
                          tf_version=loaded.tf_version,
                          frozen_with_tf=tf.__version__),
        inputs=frozen.inputs, outputs=frozen.outputs, fixed=dict(frozen.fixed),
        tf115_unknown_ops=dict(frozen.unknown_to_tf115), random_ops=dict(frozen.random_ops),
        signature_keys=dict(frozen.signature_keys), inference_mode=frozen.inference_mode,
    ).save()
    return FreezeReport(contract=contract, verification=frozen.verification, nodes=frozen.nodes,
                        stripped_attrs=frozen.stripped_attrs, note=loaded.note,
                        training_mode=frozen.training_mode.fixable, batch_suspects=frozen.training_mode.suspects)

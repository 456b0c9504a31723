"""`infer freeze`: a model source -> OUTDIR/model.pb + OUTDIR/model.json, the contract later stages read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from binio.atomic import write_bytes_atomic
from binio.beside import start_beside
from binio.digest import digest_bytes
from binio.errors import OutputExistsError
from binio.output import check_output
from ckpt2pb.freeze import freeze_source
from ckpt2pb.inputs import InputRequest, parse_assignment, parse_inputs
from ckpt2pb.source import LoadedSource, load_source
from ckpt2pb.verify import Verification
from infer.contract import ModelContract, SourceInfo

PB_NAME = "model.pb"
CONTRACT_NAME = "model.json"


@dataclass(frozen=True)
class FreezeReport:
    contract: ModelContract
    verification: Verification | None
    nodes: int
    stripped_attrs: int
    note: str = ""  # how the source was read, where it was not the usual way


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


def freeze_model(source: Path | str, outdir: Path | str, outputs: Sequence[str], *,
                 inputs: str | Sequence[InputRequest] = "", batch: int | None = None,
                 assignments: Sequence[str] | Mapping[str, str | bool | int | float] = (), force: bool = False,
                 verify: bool = True) -> FreezeReport:
    """Freezes `source` for `outputs` and writes the pb and its contract into `outdir`, atomically.

    `inputs`: `InputRequest`s, or the command line's text (``images:0[8,224,224,3]``); `assignments`: placeholder
    name -> value (``{"is_training": False}``), or ``NAME=VALUE`` texts."""
    outdir = Path(outdir)
    check_outdir(outdir, force)  # before TensorFlow starts: a refusal should not take seconds

    import tensorflow as tf

    requests = (parse_inputs(inputs) if inputs.strip() else ()) if isinstance(inputs, str) else tuple(inputs)
    sets = ({name: str(value).lower() if isinstance(value, bool) else str(value)
             for name, value in assignments.items()} if isinstance(assignments, Mapping)
            else dict(parse_assignment(text) for text in assignments))
    loaded = load_source(source)
    frozen = freeze_source(loaded, [o.strip() for o in outputs if o.strip()], inputs=requests, batch=batch,
                           assignments=sets, verify=verify)
    # The bytes written are hashed as they are written (both release the GIL), not read back from the file.
    hashed = start_beside(lambda: digest_bytes("sha256", frozen.serialized), "freeze-pb-sha256")
    write_bytes_atomic(outdir / PB_NAME, frozen.serialized)
    contract = ModelContract(
        path=outdir / CONTRACT_NAME, pb=PB_NAME, pb_sha256=hashed.result(),
        source=SourceInfo(path=_read_from(loaded, Path(source)), kind=loaded.kind,
                          tf_version=loaded.tf_version,
                          frozen_with_tf=tf.__version__),
        inputs=frozen.inputs, outputs=frozen.outputs, fixed=dict(frozen.fixed),
        tf115_unknown_ops=dict(frozen.unknown_to_tf115), random_ops=dict(frozen.random_ops),
        signature_keys=dict(frozen.signature_keys),
    ).save()
    return FreezeReport(contract=contract, verification=frozen.verification, nodes=frozen.nodes,
                        stripped_attrs=frozen.stripped_attrs, note=loaded.note)

"""What dump-bin decides before it writes: each input's dtype (the model's, checked against the one asked), the
batch, the layout, the folder and the source it reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from binio.dtypes import dtype
from binio.errors import DtypeError, ShapeError
from binio.layouts import ImageLayout
from binio.manifest import MANIFEST_NAME, safe_folder_name
from binio.spec import TensorSpec, format_shape
from infer.contract import ModelContract
from infer.dump_bin._sources.arrays import SourceError


@dataclass(frozen=True)
class InputPlan:
    spec: TensorSpec
    folder: str
    layout: ImageLayout
    source_text: str


def model_sha256(contract: ModelContract) -> str:
    """The model the bins are made for: the converted one once there is one, else the frozen pb."""
    return contract.converted.sha256 if contract.converted else contract.pb_sha256


def check_dtype(contract: ModelContract, spec: TensorSpec, asked: str | None) -> None:
    if asked is None:
        return
    wanted = dtype(asked, what="--dtype").name
    if wanted == spec.dtype:
        return
    which = "converted model's" if contract.converted else "model's"
    message = f"--dtype {wanted} differs from the {which} input {spec.name}, which takes {spec.dtype}"
    if wanted == "float16" and spec.dtype == "float32":
        hint = (f"bins must be what the model takes: for float16 there, convert with "
                f"`infer convert {contract.path} --input-fp16-nodes {spec.node}` (the converted model then takes "
                f"float16), or drop --dtype")
    else:
        hint = f"drop --dtype: bins are written in the model's own dtype ({spec.dtype})"
    raise DtypeError(message, hint=hint)


def model_batch(specs: tuple[TensorSpec, ...], asked: int | None) -> int:
    """The batch every batch file holds. A scalar input (an `is_training` or `keep_prob` kept as an input, a
    temperature) has no batch dimension: it is written once per batch file, as msame takes one bin per input per
    run, and has no say in the batch."""
    batched = [s for s in specs if s.shape]
    for spec in batched:
        if any(d is None for d in spec.shape[1:]):
            raise ShapeError(f"input {spec.name}: shape {format_shape(spec.shape)} has unknown dims besides the "
                             f"batch", hint="re-freeze with a fixed shape (infer freeze --inputs 'NAME[DIMS]')")
    static = {s.shape[0] for s in batched if s.shape[0] is not None}
    if len(static) > 1:
        raise ShapeError("the model's inputs disagree on the batch: "
                         + ", ".join(f"{s.name} {format_shape(s.shape)}" for s in batched))
    if static:
        (model_batch,) = static
        if asked is not None and asked != model_batch:
            first = next(s for s in batched if s.shape[0] is not None)
            raise ShapeError(f"--batch {asked} differs from the model's batch {model_batch} "
                             f"(input {first.name} has shape {format_shape(first.shape)})",
                             hint="drop --batch, or re-freeze the model for that batch")
        return int(model_batch)
    if asked is None and batched:
        raise ShapeError(f"input {batched[0].name}: the batch dimension is dynamic "
                         f"{format_shape(batched[0].shape)}: pass --batch N")
    if asked is not None and asked < 1:
        raise ShapeError(f"--batch {asked}: expected 1 or more")
    return 1 if asked is None else asked  # scalars only: each batch file is one run


def batch_file_spec(spec: TensorSpec, batch: int) -> TensorSpec:
    """What one batch file of `spec` holds: `batch` samples, a dynamic batch pinned; a scalar as it is."""
    return spec.with_shape((batch, *spec.shape[1:])) if spec.shape else spec


def input_layout(spec: TensorSpec, asked: str | None) -> ImageLayout:
    if asked is None:
        return "NCHW" if spec.layout == "NCHW" else "NHWC"
    upper = asked.upper()
    if upper != "NHWC" and upper != "NCHW":
        raise ShapeError(f"--layout {asked}: expected NHWC or NCHW")
    layout: ImageLayout = "NHWC" if upper == "NHWC" else "NCHW"
    if spec.layout in ("NHWC", "NCHW") and spec.layout != layout:
        raise ShapeError(f"--layout {layout} differs from the model's input {spec.name}, which is {spec.layout}")
    return layout


def assign_sources(specs: tuple[TensorSpec, ...], sources: tuple[tuple[str, str], ...],
                    keys: dict[str, str]) -> dict[str, str]:
    """Input tensor name -> source text, from ``--source NAME=SOURCE`` pairs and the lone SOURCE; NAME may be a
    SavedModel signature key (`keys`: tensor -> key)."""
    assigned: dict[str, str] = {}
    lone: str | None = None
    for name, text in sources:
        if not name:
            if lone is not None:
                raise SourceError(f"two unnamed sources ({lone}, {text}): name them with --source NAME=SOURCE")
            lone = text
            continue
        # A tensor or node name first: a folder name (bert_ids for bert/ids:0) may also be another input's node name.
        spec = next((s for s in specs if name in (s.name, s.node)), None) or next(
            (s for s in specs if name == safe_folder_name(s.name)), None) or next(
            (s for s in specs if name == keys.get(s.name)), None)
        if spec is None:
            raise SourceError(f"--source {name}={text}: the model has no input {name!r}; its inputs are: "
                              + ", ".join(s.name for s in specs))
        if spec.name in assigned:
            raise SourceError(f"--source {name}: given twice ({assigned[spec.name]}, {text})")
        assigned[spec.name] = text
    if lone is not None:
        rest = [s for s in specs if s.name not in assigned]
        shared = lone.lower().endswith(".npz") or (Path(lone).is_dir() and (Path(lone) / MANIFEST_NAME).is_file())
        if len(rest) > 1 and not shared:
            raise SourceError(f"{lone}: the model has {len(specs)} inputs ({', '.join(s.name for s in specs)}); "
                              f"name a source for each with --source NAME=SOURCE",
                              hint="a lone .npz (keys named after the inputs) or dump-bin dataset feeds them all")
        for spec in rest:
            assigned[spec.name] = lone
    missing = [s.name for s in specs if s.name not in assigned]
    if missing:
        raise SourceError(f"no source for input {', '.join(missing)}: pass --source NAME=SOURCE for each input")
    return assigned

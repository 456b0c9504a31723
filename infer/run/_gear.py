"""The gear an msame or ais_bench start runs at: the dataset's, the flags that pick it, the outputs' shapes at it.

A model converted with gears (or a shape range) runs one gear per start, named by a flag (docs/ascend-tools.md,
Gears): ``--dymBatch N``, ``--dymHW H,W``, ``--dymDims`` and ``--dymShape`` (with ``--outputSize``, the outputs'
bytes at that shape) with every input's shape by the om's input names (ATC's: the placeholders' node names). The
two tools spell them alike. The gear is the one the bins are (dataset.json's ``gear``, checked against the bins'
shapes); the outputs' shapes at it come from the contract where it fixes them, else from TensorFlow's static shape
inference on the frozen pb with the inputs at the gear's shapes, so that a file msame padded to its buffer can be
trimmed to the gear's real size.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from binio.errors import first_line
from binio.gears import BATCH, DIMS, IMAGE_SIZE, RANGE, DynamicShape, Gear, gear_label, shapes_at
from binio.manifest import DatasetManifest
from binio.names import node_name
from binio.spec import TensorSpec, format_shape
from infer.contract import ModelContract
from infer.gear_check import check_dataset_gear
from infer.run.options import RunError


@dataclass(frozen=True)
class GearRun:
    """One tool start's gear: what it is, the flags naming it, and the model's outputs at it."""

    kind: str
    gear: Gear
    flags: tuple[str, ...]
    outputs: tuple[TensorSpec, ...]  # concrete shapes at the gear, in output order

    @property
    def label(self) -> str:
        return gear_label(self.kind, self.gear)


def dataset_gear(gears: DynamicShape, manifest: DatasetManifest) -> Gear:
    """The gear the bins are, by their shapes (preflight refused any other); refused where dataset.json names
    another."""
    gear = check_dataset_gear(manifest, gears)
    if gear is None:  # an input the bins lack: named by the checks run makes first (preflight)
        raise RunError(f"{manifest.path}: the bins lack an input the model's gears vary")
    if manifest.gear_kind and (manifest.gear_kind, manifest.gear) != (gears.kind, gear):
        raise RunError(f"{manifest.path}: says its bins are {manifest.gear_label}, their shapes are "
                       f"{gear_label(gears.kind, gear)}", hint="re-run infer dump-bin, which writes both")
    return gear


def gear_run(contract: ModelContract, manifest: DatasetManifest, inputs: tuple[TensorSpec, ...],
             outputs: tuple[TensorSpec, ...]) -> GearRun | None:
    """The gear of this dataset for a tool over `inputs` (in the om's order) and `outputs`; None for a static
    model."""
    gears = contract.gears
    if gears is None:
        return None
    gear = dataset_gear(gears, manifest)
    at_gear = outputs_at(contract, gears, gear, _unknown_where_the_pb_is(contract, outputs))
    return GearRun(kind=gears.kind, gear=gear, flags=gear_flags(gears, gear, inputs, at_gear), outputs=at_gear)


def gear_flags(gears: DynamicShape, gear: Gear, inputs: tuple[TensorSpec, ...],
               outputs: tuple[TensorSpec, ...] = ()) -> tuple[str, ...]:
    """The flags msame and ais_bench take for `gear`, `inputs` in the om's order; a shape range's also need the
    `outputs` at it (their sizes go to --outputSize)."""
    shapes = shapes_at(gears, gear)
    named = ";".join(f"{node_name(spec.name)}:{','.join(map(str, shapes[spec.name]))}" for spec in inputs
                     if spec.name in shapes)
    if gears.kind == BATCH:
        return ("--dymBatch", str(gear[0]))
    if gears.kind == IMAGE_SIZE:
        return ("--dymHW", f"{gear[0]},{gear[1]}")
    if gears.kind == DIMS:
        return ("--dymDims", named)
    # the om's output size is unknown (0) until it runs: the buffers are the outputs' sizes at this shape
    sizes = ",".join(str(spec.nbytes()) for spec in outputs)
    return ("--dymShape", named, "--outputSize", sizes)


def tool_gear_flags(contract: ModelContract, manifest: DatasetManifest) -> tuple[str, ...]:
    """The gear flags msame or ais_bench take for this dataset of this model (none for a static model): for lines
    that show the tool's command, such as the pipeline report's."""
    gears = contract.gears
    if gears is None:
        return ()
    gear = dataset_gear(gears, manifest)
    inputs = contract.model_inputs
    outputs = outputs_at(contract, gears, gear, contract.model_outputs) if gears.kind == RANGE else ()
    return gear_flags(gears, gear, inputs, outputs)


@dataclass(frozen=True)
class GearOutputs:
    """A dataset's outputs as msame or ais_bench write them for a model with gears: their shapes at the dataset's
    gear, and the most bytes a tool writes for each (msame's buffer, sized for the largest gear)."""

    label: str  # the dataset's gear (``batch 3``)
    outputs: tuple[TensorSpec, ...]  # concrete shapes at the gear, in output order
    largest_bytes: tuple[int, ...]  # per output: its size at the gear that makes it largest (a range's: at this one)


def gear_outputs(contract: ModelContract, manifest: DatasetManifest) -> GearOutputs | None:
    """The outputs of this dataset of this model as the tools write them; None for a static model. A shape range's
    buffers are --outputSize's, the sizes at this shape; the gears' are sized for the largest gear."""
    gears = contract.gears
    if gears is None:
        return None
    gear = dataset_gear(gears, manifest)
    opened = _unknown_where_the_pb_is(contract, contract.model_outputs)
    at_gear = outputs_at(contract, gears, gear, opened)
    largest = [spec.nbytes() for spec in at_gear]
    for other in gears.gears:
        if other != gear:
            largest = [max(most, spec.nbytes()) for most, spec in
                       zip(largest, outputs_at(contract, gears, other, opened), strict=True)]
    return GearOutputs(label=gear_label(gears.kind, gear), outputs=at_gear, largest_bytes=tuple(largest))


def _unknown_where_the_pb_is(contract: ModelContract, outputs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
    """`outputs` (the om's own descriptors, where read) with a dim unknown again wherever the frozen pb leaves it
    unknown: an om with gears may state its outputs at one gear (CANN's aclmdlGetOutputDims gives the largest), which
    is not the gear this run is at."""
    frozen = {spec.name: spec for spec in contract.outputs}
    opened = []
    for spec in outputs:
        pb = frozen.get(spec.name)
        if pb is not None and len(pb.shape) == len(spec.shape):
            spec = replace(spec, shape=tuple(None if p is None else d for p, d in zip(pb.shape, spec.shape,
                                                                                      strict=True)))
        opened.append(spec)
    return tuple(opened)


def outputs_at(contract: ModelContract, gears: DynamicShape, gear: Gear,
               outputs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
    """`outputs` with every unknown dim filled for `gear`: a batch gear's unknown leading dim is its batch;
    anything else from TensorFlow's shape inference on the frozen pb, its inputs fixed at the gear's shapes."""
    if all(spec.is_static for spec in outputs):
        return outputs
    if gears.kind == BATCH and all(d is not None for spec in outputs for d in spec.shape[1:]):
        return tuple(spec if spec.is_static else replace(spec, shape=(gear[0], *spec.shape[1:])) for spec in outputs)
    inferred = _inferred_shapes(contract, shapes_at(gears, gear))
    filled = []
    for index, spec in enumerate(outputs):
        shape = inferred.get(spec.name) or (inferred.get(contract.outputs[index].name)
                                            if index < len(contract.outputs) else None)
        fits = shape is not None and len(shape) == len(spec.shape) and all(
            d is not None and (want is None or want == d) for want, d in zip(spec.shape, shape, strict=True))
        if shape is None or not fits:
            need = "--outputSize needs each output's size" if gears.kind == RANGE else \
                "the tool's files cannot be checked or trimmed without it"
            raise RunError(f"output {spec.name} {format_shape(spec.shape)}: its shape at "
                           f"{gear_label(gears.kind, gear)} is not known (TensorFlow infers "
                           f"{format_shape(shape) if shape is not None else 'nothing'} from {contract.pb_path})",
                           hint=f"{need}; the stand-in (--backend onnxrt) computes it")
        filled.append(replace(spec, shape=tuple(int(d) for d in shape if d is not None)))
    return tuple(filled)


@functools.lru_cache(maxsize=2)
def _graph_def(path: str, mtime_ns: int, size: int) -> Any:
    """The frozen pb, read once for every gear a caller infers shapes at (a model with gears: each gear's outputs,
    and the largest one's); keyed by the file's time and size, so a pb written again is read again."""
    from ckpt2pb.protobuf import HostOpPolicy, read_graph_def

    return read_graph_def(Path(path), HostOpPolicy.INERT)  # shapes only, nothing runs


def _inferred_shapes(contract: ModelContract, inputs: dict[str, tuple[int, ...]]) -> dict[str, tuple[Any, ...]]:
    """Each contract output's static shape as TensorFlow infers it with the inputs at `inputs` (None dims where
    it cannot tell)."""
    import tensorflow as tf

    from ckpt2pb.logs import quiet_tensorflow_logs

    quiet_tensorflow_logs()
    stat = contract.pb_path.stat()
    graph_def = _graph_def(str(contract.pb_path), stat.st_mtime_ns, stat.st_size)
    tf1 = tf.compat.v1
    with tf.Graph().as_default():
        fixed = {spec.name: tf1.placeholder(tf.as_dtype(spec.dt.np_dtype), inputs[spec.name],
                                            name=f"infer_gear_input_{index}")
                 for index, spec in enumerate(contract.inputs) if spec.name in inputs}
        try:
            found = tf1.import_graph_def(graph_def, input_map=fixed,
                                         return_elements=[s.name for s in contract.outputs], name="model")
        except (ValueError, TypeError) as exc:  # a shape the graph's ops refuse
            shown = ", ".join(f"{name} {format_shape(shape)}" for name, shape in inputs.items())
            raise RunError(f"{contract.pb_path}: TensorFlow cannot take the inputs at {shown}: {first_line(exc)}",
                           hint="the model may not take this gear; check convert's gears against the graph") from None
        return {spec.name: tuple(tensor.shape.as_list()) for spec, tensor in zip(contract.outputs, found, strict=True)
                if tensor.shape.rank is not None}

"""`compare --layerwise --npu-dump DIR`: TensorFlow's intermediate tensors against an NPU's dumped ones.

On the batch the dump ran (`infer.compare._npu.dump_set`), TensorFlow computes every tensor of the frozen pb, as for
the stand-in. Each dumped output of an om op is the TF tensor the om's fusion map says it holds
(`infer.compare._npu.fusion_map`), turned from its device layout (NC1HWC0, FRACTAL_NZ, ...) back into the origin format
and shape the om records for it, or, where the om has none, those the dump records; where neither says, it is not
compared (a layout is known, never guessed). The same per-layer rules as on the stand-in: only relative measures
judge a tensor, and the first diverging tensor is the first failing one whose compared upstream all passes; its
row names the fused om op, its type and the TF nodes fused into it.

Random ops: where the dump holds a random op's output (the NPU's draw), TensorFlow is fed those numbers in place of
its own draw, so what follows it is computed from the same numbers on both sides and is compared exactly, where it
would otherwise be skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from atc_wrap.ascend_files.npu_dump import DumpTensor
from atc_wrap.ascend_files.om_model import read_om
from binio.errors import InferError
from binio.manifest import DatasetManifest
from binio.spec import node_name
from ckpt2pb.protobuf import HostOpPolicy, read_graph_def
from infer.compare._judge.metrics import compute_metrics
from infer.compare._layers.conclusion import conclude
from infer.compare._layers.diagnosis import layer_thresholds
from infer.compare._layers.golden_dump import dump_golden_tensors
from infer.compare._layers.stand_in import emulated_bands
from infer.compare._layers.tensors import GraphTensor, is_random_op, run_tensorflow
from infer.compare._npu.dump_set import NpuDumpSet, load_npu_dump
from infer.compare._npu.fusion_map import FusionMatch, NpuOutput, match_fusion
from infer.compare.errors import LayerwiseError
from infer.compare.layer_result import LayerRow, LayerwiseResult
from infer.compare.options import DEFAULT_FACTOR
from infer.compare.result import CompareResult
from infer.compare.thresholds import Thresholds
from infer.contract import ModelContract


@dataclass(frozen=True)
class NpuValue:
    """A dumped output in TF's layout, or why it cannot be had."""

    output: NpuOutput
    value: np.ndarray | None
    layout: str  # how it was turned back, or why it was not


def check_npu_dump(contract: ModelContract) -> None:
    """Refuses --npu-dump for a model that is not an om: a dump comes from the om that ran."""
    if contract.converted is None or contract.converted.target != "om":
        found = "not converted" if contract.converted is None else f"converted to {contract.converted.target}"
        raise LayerwiseError(f"--npu-dump: {contract.path} is {found}; an NPU dump is compared through the om's "
                             "fusion map", hint="infer convert --target om (ATC), then infer run --dump on the device")


def _origin(output: NpuOutput, tensor: DumpTensor) -> tuple[str, tuple[int, ...] | None, str]:
    """The origin format and shape to turn the dumped tensor back into, and whose word it is."""
    om_format, om_shape = output.origin_format, output.tensor.origin_shape
    if om_format and om_shape is not None:
        return om_format, om_shape, "the om's"
    if tensor.original_format and tensor.original_shape is not None:
        return tensor.original_format, tensor.original_shape, "the dump's"
    return "", None, ""


def npu_value(output: NpuOutput, dumps: NpuDumpSet) -> NpuValue:
    """The dumped output `output` in TF's layout: its om op's dump file, its output, the layout turned back."""
    dump = dumps.dump_of(output.op_name)
    if dump is None:
        why = dumps.unreadable_reason(output.op_name)
        unmapped = (f" ({len(dumps.unmapped)} file(s) named by a number have no row in a mapping.csv: "
                    f"{dumps.unmapped[0].name}{', ...' if len(dumps.unmapped) > 1 else ''})") if dumps.unmapped else ""
        return NpuValue(output, None, f"its dump file cannot be read: {why}" if why else
                        f"no dump file of NPU op {output.op_name} in {dumps.root}{unmapped}")
    if output.index >= len(dump.outputs):
        return NpuValue(output, None, f"{dump.path.name} holds {len(dump.outputs)} output(s), not output "
                                      f"{output.index} (dumped with dump_mode input?)")
    tensor = dump.outputs[output.index]
    fmt, shape, whose = _origin(output, tensor)
    if not fmt or shape is None:
        return NpuValue(output, None, f"layout not known: neither the om nor the dump gives the origin format and "
                                      f"shape of {tensor.format} {list(tensor.shape)}")
    try:
        value = tensor.origin_array(fmt, shape)
    except InferError as exc:
        return NpuValue(output, None, f"{dump.path.name}: {exc.message}")
    moved = "" if tensor.format == fmt and tuple(tensor.shape) == tuple(shape) else \
        f"{tensor.format} {list(tensor.shape)} turned into "
    note = dumps.note_of(output.op_name)
    return NpuValue(output, value, f"{moved}{fmt} {list(shape)} ({whose} origin)" + (f"; {note}" if note else ""))


def _tf_graph_nodes(contract: ModelContract) -> dict[str, str]:
    contract.check_pb_unchanged()
    return {node.name: node.op for node in read_graph_def(contract.pb_path, HostOpPolicy.INERT).node}


def drawn_by_npu(values: dict[str, NpuValue], node_types: dict[str, str]) -> dict[str, np.ndarray]:
    """The dumped outputs of random ops (the NPU's draw), by TF tensor."""
    return {name: item.value for name, item in values.items()
            if item.value is not None and is_random_op(node_types.get(node_name(name), ""))}


class _Rows:
    """The row of each TF tensor: compared against its dumped value, or why not."""

    def __init__(self, match: FusionMatch, values: dict[str, NpuValue], fed: set[str], thresholds: Thresholds,
                 atol: float, rtol: float) -> None:
        self.match, self.values, self.fed = match, values, fed
        self.thresholds, self.atol, self.rtol = thresholds, atol, rtol
        self.aligned: dict[str, np.ndarray] = {}

    def row(self, tensor: GraphTensor, golden: np.ndarray | None) -> LayerRow:
        shape = tuple(int(d) for d in golden.shape) if golden is not None else ()
        base = LayerRow(tensor=tensor.name, op_type=tensor.op_type, dtype=tensor.dtype, shape=shape, metrics=None,
                        failures=())
        output = self.match.outputs.get(tensor.name)
        if output is not None:
            base = replace(base, npu_op=output.op_name, npu_op_type=output.op_type, fused_nodes=output.fused_nodes)
        if tensor.name in self.fed:
            return replace(base, unmatched_reason="the NPU's draw, read from its dump and fed to TensorFlow in place "
                                                  "of its own: what follows it is compared")
        if tensor.random_source:
            return replace(base, unmatched_reason=f"computed from the random op {tensor.random_source}, whose draw "
                           "the dump does not hold: never compared", random_source=tensor.random_source)
        if golden is None:
            return replace(base, unmatched_reason="TensorFlow could not fetch it")
        if output is None:
            inside = self.match.computed_by.get(node_name(tensor.name))
            return replace(base, unmatched_reason=(
                f"fused into NPU op {inside.name} ({inside.type}), which does not output it" if inside is not None
                else "no op of the om computes it (ATC folded or removed it)"))
        item = self.values[tensor.name]
        if item.value is None:
            return replace(base, unmatched_reason=item.layout)
        actual = item.value
        if tuple(actual.shape) != shape:
            return replace(base, unmatched_reason=f"shape {list(actual.shape)} in the dump ({item.layout}), "
                                                  f"{list(shape)} in TensorFlow")
        metrics = compute_metrics(actual, golden, atol=self.atol, rtol=self.rtol)
        self.aligned[tensor.name] = actual
        return replace(base, metrics=metrics, failures=self.thresholds.failures(tensor.name, metrics),
                       match="fusion map", layout=item.layout)


def compare_npu_layers(contract: ModelContract, manifest: DatasetManifest, thresholds: Thresholds, npu_dump: Path,
                       *, atol: float, rtol: float, dump_golden: Path | None = None,
                       outcome: CompareResult | None = None, bands_from: Path | None = None,
                       factor: float = DEFAULT_FACTOR) -> LayerwiseResult:
    """TensorFlow against the NPU's dump tensor by tensor, on the batch the dump ran; optionally dumps TF's tensors
    (fed the NPU's draws) in msaccucmp's golden naming. `bands_from`: the cache root of the stand-in's emulation of
    the om's precision mode, which gives each tensor its expected-error band (None: judged by msit's limits)."""
    check_npu_dump(contract)
    contract.check_converted_unchanged()
    assert contract.converted is not None
    om = read_om(contract.folder / contract.converted.path)
    dumps = load_npu_dump(npu_dump, manifest)
    node_types = _tf_graph_nodes(contract)
    match = match_fusion(om, node_types)
    values = {name: npu_value(output, dumps) for name, output in match.outputs.items()}
    drawn = drawn_by_npu(values, node_types)
    tensors, golden = run_tensorflow(contract, manifest, dumps.stem, drawn=drawn)
    if dump_golden is not None:
        dump_golden_tensors(golden, dump_golden)
    fed = set(drawn)
    floats = [t for t in tensors if t.is_float]
    inputs_of = {t.name: t.inputs for t in tensors}
    rows_of = _Rows(match, values, fed, layer_thresholds(thresholds), atol, rtol)
    rows = [rows_of.row(tensor, golden.get(tensor.name)) for tensor in floats]
    bands, band_note = None, ""
    if bands_from is not None and drawn:  # the emulation draws its own numbers: no band for what follows them
        band_note = "no expected-error band: TensorFlow was fed the dump's random draws, the emulation draws its own"
    elif bands_from is not None:
        bands, band_note = emulated_bands(contract, manifest, dumps.stem, floats, golden, inputs_of, bands_from,
                                          factor)
    return conclude(contract, tensors, golden, rows, rows_of.aligned, stem=dumps.stem, batch_reason=dumps.batch_reason,
                    outcome=outcome, bands=bands, band_note=band_note, npu_dump=str(dumps.root),
                    fed_from_dump=tuple(sorted(fed)))

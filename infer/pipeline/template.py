"""``infer pipeline init``: a commented pipeline.toml, filled in from an inspected model.

The same renderer writes the demo's pipeline file, so what the demo runs is a file the user can edit and re-run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.atomic import write_bytes_atomic
from binio.output import check_output
from infer.pipeline.config import GENERATOR_PREFIXES


@dataclass(frozen=True)
class TemplateValues:
    """What goes into the file; every other key is written commented out, at its default."""

    source: str
    outputs: tuple[str, ...]
    inputs: tuple[str, ...] = ()
    batch: int = 1
    set_values: dict[str, str] = field(default_factory=dict)
    data_source: str = "images/"
    scale: float = 1.0
    labels: str = ""
    work_dir: str = "work"
    notes: tuple[str, ...] = ()  # comment lines for the top of the file (what inspect found)
    other_candidates: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()  # placeholders with a default (is_training...), folded at freeze
    aipp: bool = False  # [convert] aipp = true: the NPU does [data.preprocessing] on uint8 images
    soc_version: str = ""  # [convert] soc_version written out; "" = commented out (convert's default: none)


def _toml(value: object) -> str:
    """A TOML literal for a str, number, bool or list of them (JSON's spelling is TOML's for these)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _switch_value(text: str) -> str:
    """true/false bare (a TOML boolean), anything else as _toml writes it."""
    return text if text in ("true", "false") else _toml(text)


def render_template(values: TemplateValues) -> str:
    lines = ["# infer pipeline: every stage from one file. `infer pipeline run THIS_FILE` runs them all;",
             "# a re-run skips the stages whose inputs (sha256) and settings have not changed.",
             "# Relative paths are relative to this file's folder."]
    lines += [f"# {note}" for note in values.notes]
    lines += ["", "[model]",
              "# A checkpoint prefix or folder, a .meta, a frozen .pb, a SavedModel folder or a Keras file.",
              f"source = {_toml(values.source)}",
              "# The tensors the converted model returns (ATC's --out_nodes)."]
    if values.other_candidates:
        lines.append(f"# Other candidates inspect ranked: {', '.join(values.other_candidates)}")
    lines.append(f"outputs = {_toml(list(values.outputs))}")
    lines += ["# The model's inputs; a tensor that is not a placeholder (IteratorGetNext:0) becomes one.",
              "# Shape and dtype may be given per input: \"images:0[8,224,224,3]\"."]
    lines.append(f"inputs = {_toml(list(values.inputs))}")
    lines += ["# Fixes an unknown first dimension: ATC and msame need a static batch.",
              f"batch = {values.batch}",
              "# Placeholders folded to a value at freeze; those with a default are folded to it anyway."]
    if values.switches:
        lines.append(f"# With a default here: {', '.join(values.switches)}")
    set_items = ", ".join(f"{_toml(k) if not k.isidentifier() else k} = {_switch_value(v)}"
                          for k, v in sorted(values.set_values.items()))
    lines.append(f"set = {{ {set_items} }}" if set_items else "# set = { is_training = \"false\" }")

    lines += ["", "[data]",
              "# An image folder, an .npy/.npz, a folder of .bin files, or const:VALUE / random:SEED.",
              f"source = {_toml(values.data_source)}",
              "# dtype = \"\"          # \"\" = the converted model's input dtype; anything else must equal it",
              "# layout = \"\"         # NHWC | NCHW for images; \"\" = the model's",
              "# allow_lossy = false  # write values the cast loses (fp16 overflow, NaN) instead of refusing",
              "", "[data.preprocessing]  # images only: (pixel * scale - mean) / std after resize + centre crop",
              "# resize = 0          # shorter side before the crop; 0 = just large enough",
              "# color = \"RGB\"       # or BGR",
              f"scale = {_toml(values.scale)}",
              "# mean = [0.0]        # one value, or one per channel",
              "# std = [1.0]"]

    lines += ["", "[convert]",
              "# target = \"auto\"        # om where ATC is installed, else onnx (the ONNX Runtime stand-in)",
              f"soc_version = {_toml(values.soc_version)}" if values.soc_version
              else "# soc_version = \"\"      # the chip ATC compiles for (npu-smi info names it); an om needs one",
              "# ATC's default precision mode; the stand-in emulates it (fp16 storage after every op).",
              "precision_mode = \"force_fp16\"  # force_fp32 | allow_fp32_to_fp16 | must_keep_origin_dtype | "
              "allow_mix_precision",
              "# input_fp16_nodes = \"\"   # \"a;b\": these inputs take float16 bins",
              "# output_type = \"\"        # FP32 | FP16 | \"node:0:FP16;...\"",
              "# input_format = \"\"       # NHWC | NCHW | ND; \"\" = from the model",
              "# op_select_implmode = \"\"",
              "# atc_args = []           # more ATC flags, passed as they are",
              "# opset = 0               # stand-in: 0 = the highest tf2onnx and onnxruntime both handle",
              "# keep_dtype = \"\"         # ATC's keep_dtype file (from infer tune-precision): ops kept in fp32",
              "# modify_mixlist = \"\"     # ATC's modify_mixlist JSON (allow_mix_precision only)",
              "# customize_dtypes = \"\"   # ATC's customize_dtypes file",
              "# AIPP: the NPU does [data.preprocessing] (colour, mean, std, scale) on uint8 images; resize stays",
              "# host-side. aipp_config = \"aipp.cfg\" takes a hand-written config instead.",
              "aipp = true" if values.aipp else "# aipp = false",
              "# aipp_input_format = \"\"  # RGB888_U8 | YUV420SP_U8 | XRGB8888_U8 | YUV400_U8",
              "# aipp_src_size = []      # [width, height] of the uint8 source; [] = the model input's size",
              "# aipp_crop = []          # [x, y] of the crop window; [] = centred",
              "# aipp_csc = \"\"           # YUV420SP_U8: jpeg | bt601n | bt601w | bt709n | bt709w; \"\" = jpeg"]

    lines += ["", "[run]",
              "# backend = \"auto\"  # from what convert made; or onnxrt | tf | msame | ais_bench",
              "# device: left out = the backend's default; device = 1 runs on the second NPU (or GPU)",
              "# loop = 1",
              "# warmup = 1        # untimed runs of the first batch before timing starts",
              "# threads = 0       # 0 = the backend's default"]

    lines += ["", "[compare]"]
    lines.append(f"labels = {_toml(values.labels)}" if values.labels
                 else "# labels = \"labels.txt\"  # class indices (a line each, or .npy) or 'name label' lines")
    lines += ["# topk = 5",
              "# layerwise = false  # stand-in only: find the first layer whose outputs diverge",
              "# expected_from_emulation = true  # error against the stand-in's emulated precision (default: om only)",
              "# expected_factor = 10.0          # how many times the emulated error an output may reach",
              "# fail_on_expected = false        # an output past that factor fails the run",
              "# allow_same_backend = false      # compare a [run] backend = \"tf\" with TF, on purpose",
              "# Defaults are msit's: cosine < 0.99, RED > 0.05, KL > 0.005, RMSE > 1.0 or MeanRE > 1.0 fails.",
              "# thresholds = { cosine = 0.999, \"probs:0:kl\" = 0.01 }",
              "# (a key \"sample:cosine\" limits each sample on its own: one bad sample fails the run)"]

    lines += ["", "[paths]", f"work_dir = {_toml(values.work_dir)}  # model/, bins/, out/, report/ and the state file"]
    return "\n".join(lines) + "\n"


def write_template(path: Path, values: TemplateValues, *, force: bool = False) -> Path:
    path = Path(path)
    check_output(path, force=force)
    write_bytes_atomic(path, render_template(values).encode())
    return path


def _ancestors(graph_def: Any, start: set[str]) -> set[str]:
    """Every node the `start` nodes read, directly or through others (data and control inputs)."""
    from binio.spec import node_name

    inputs = {node.name: [node_name(ref) for ref in node.input] for node in graph_def.node}
    seen: set[str] = set()
    todo = [n for n in start if n in inputs]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [n for n in inputs.get(name, ()) if n not in seen]
    return seen


def values_from_model(model: Path, *, data_source: str = "images/", labels: str = "",
                      relative_to: Path | None = None) -> TemplateValues:
    """Inspects `model` (imports TensorFlow): its best output candidate, the placeholders that output reads
    (a training graph's `labels` placeholder is left out), and its switches."""
    import os

    from binio.spec import node_name
    from ckpt2pb.graphinfo import feed_tensors_read
    from ckpt2pb.inspection import inspect_loaded
    from ckpt2pb.source import load_source

    loaded = load_source(model)
    report = inspect_loaded(loaded)
    # A SavedModel's signature says what it answers and takes: every output, named by its key, as freeze
    # accepts them; elsewhere the best candidate.
    keyed = tuple(c for c in report.candidates if c.signature_key)
    chosen = keyed or report.candidates[:1]
    outputs = tuple(c.signature_key or c.tensor for c in chosen)
    needed = feed_tensors_read(loaded.graph_def, _ancestors(loaded.graph_def, {node_name(c.tensor) for c in chosen}))
    # A bool scalar (or shape-less) placeholder without a default is a switch: fixed with `set`, not fed.
    unset = [p for p in report.placeholders if p.is_switch and not p.has_default
             and (not outputs or p.tensor in needed)]
    fed = [p for p in report.placeholders if not p.has_default and p not in unset]
    input_keys = report.input_keys
    taken = [p for p in fed if not outputs or p.tensor in needed]
    inputs = tuple(input_keys.get(p.tensor, p.tensor) for p in taken)
    unused = [p.tensor for p in fed if p not in taken]
    switches = tuple(p.tensor for p in report.placeholders if p.has_default)

    def relative(path: str) -> str:
        """A path as the pipeline file reads it: relative to that file's folder, as freeze's model is."""
        if relative_to is None or not path or path.startswith(GENERATOR_PREFIXES):
            return path
        return os.path.relpath(Path(path).resolve(), Path(relative_to).resolve()) + ("/" if path.endswith("/") else "")

    source = relative(str(model))
    dynamic = [input_keys.get(p.tensor, p.tensor) for p in taken if p.dynamic_dims]
    # A graph whose inputs already have a static batch (a frozen pb) must be given that batch, not 1.
    static = {p.shape[0] for p in taken if p.shape and p.shape[0] is not None}
    batch = static.pop() if len(static) == 1 else 1
    notes = [f"Written by `infer pipeline init` from {model} ({report.kind}, {report.parameters:,} parameters)."]
    if report.signature:
        notes.append(f"Signature {report.signature_name}: "
                     + ", ".join(f"{e.key} = {e.tensor} ({e.role})" for e in report.signature) + ".")
    if dynamic:
        notes.append(f"Inputs with dynamic dims: {', '.join(dynamic)}; `batch` fixes the first one.")
    shapeless = [p.tensor for p in taken if p.shape is None]
    if shapeless:
        notes.append(f"Inputs without a shape: {', '.join(shapeless)}. A setting such as keep_prob belongs in "
                     f"set (set = {{ {node_name(shapeless[0])} = 1.0 }}), data needs its shape in inputs "
                     f"(\"{shapeless[0]}[1,224,224,3]\").")
    if unused:
        notes.append(f"Placeholders {', '.join(outputs)} does not read, left out of inputs: {', '.join(unused)}.")
    if not outputs:
        notes.append("inspect found no output candidate: fill in [model] outputs.")
    return TemplateValues(source=source, outputs=outputs, inputs=inputs, batch=batch,
                          set_values={node_name(p.tensor): "false" for p in unset},
                          data_source=relative(data_source), labels=relative(labels), notes=tuple(notes),
                          other_candidates=tuple(c.tensor for c in report.candidates[len(chosen):len(chosen) + 3]),
                          switches=switches)

"""``infer pipeline init``: a commented pipeline.toml, filled in from an inspected model.

The same renderer writes the demo's pipeline file, so what the demo runs is a file the user can edit and re-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.atomic import write_bytes_atomic
from binio.output import check_output
from binio.spec import node_name
from ckpt2pb.graphinfo import feed_tensors_read
from ckpt2pb.inspection import inspect_loaded
from ckpt2pb.source import load_source
from ckpt2pb.surgery import reachable
from infer._option_fields import template_lines, toml_literal, toml_text_value
from infer.compare.options import CompareOptions
from infer.convert.options import ConvertOptions
from infer.pipeline.config import GENERATOR_PREFIXES, DataSection, ModelSection
from infer.preprocessing import ImageOptions
from infer.remote.options import RemoteOptions
from infer.run.options import RunOptions
from infer.tune.options import TuneOptions


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
    keep_dtype: str = ""  # [convert] keep_dtype written out (tune-precision's file); "" = commented out
    layerwise: bool = False  # [compare] layerwise = true written out


_DESCRIBE: dict[str, dict[str, list[str]]] = {
    "data": {"source": ["# An image folder, an .npy/.npz, a folder of .bin files, or const:VALUE / random:SEED."]},
    "convert": {
        "precision_mode": ["# ATC's default precision mode; the stand-in emulates it (fp16 storage after every op)."],
        "aipp": ["# AIPP: the NPU does [data.preprocessing] (colour, mean, std, scale) on uint8 images; resize stays",
                 "# host-side. aipp_config = \"aipp.cfg\" takes a hand-written config instead."],
        "keep_dtype": ["# ATC's per-op precision files, relative to this file: passed to ATC, emulated by the "
                       "stand-in."],
    },
    "tune": {"precision_mode": ["# `infer pipeline tune THIS_FILE`: the ops to keep in fp32 so that compare passes."]},
    "compare": {"thresholds": [
        "# Defaults are msit's: cosine < 0.99, RED > 0.05, KL > 0.005, RMSE > 1.0 or MeanRE > 1.0 fails.",
        "# thresholds = { cosine = 0.999, \"probs:0:kl\" = 0.01 }",
        "# (a key \"sample:cosine\" limits each sample on its own: one bad sample fails the run)"]},
}


def _table(name: str, cls: type, written: dict[str, Any]) -> list[str]:
    """A [name] table of the template: its keys, their defaults and help from `cls`'s fields."""
    notes = _DESCRIBE.get(name, {})
    return ["", f"[{name}]", *template_lines(cls, written, lambda key: notes.get(key, []))]


def render_template(values: TemplateValues) -> str:
    lines = ["# infer pipeline: every stage from one file. `infer pipeline run THIS_FILE` runs them all;",
             "# a re-run skips the stages whose inputs (their digests) and settings have not changed.",
             "# Each table is one stage's options; a key is the flag of the same name (docs/options.md).",
             "# Relative paths are relative to this file's folder and stay inside it (no '..');",
             "# a path outside it is written absolute."]
    lines += [f"# {note}" for note in values.notes]
    lines += ["", "[model]",
              "# A checkpoint prefix or folder, a .meta, a frozen .pb, a SavedModel folder or a Keras file.",
              f"source = {toml_literal(values.source)}",
              "# The tensors the converted model returns (ATC's --out_nodes)."]
    if values.other_candidates:
        lines.append(f"# Other candidates inspect ranked: {', '.join(values.other_candidates)}")
    lines.append(f"outputs = {toml_literal(list(values.outputs))}")
    lines += ["# The model's inputs; a tensor that is not a placeholder (IteratorGetNext:0) becomes one.",
              "# Shape and dtype may be given per input: \"images:0[8,224,224,3]\"."]
    lines.append(f"inputs = {toml_literal(list(values.inputs))}")
    lines += ["# Fixes an unknown first dimension: ATC and msame need a static batch (left out: the graph's own).",
              f"batch = {values.batch}",
              "# Placeholders folded to a value at freeze; those with a default are folded to it anyway."]
    if values.switches:
        lines.append(f"# With a default here: {', '.join(values.switches)}")
    set_items = ", ".join(f"{toml_literal(k) if not k.isidentifier() else k} = {toml_text_value(v)}"
                          for k, v in sorted(values.set_values.items()))
    lines.append(f"set = {{ {set_items} }}" if set_items else "# set = { is_training = \"false\" }")
    lines += [line for line in template_lines(ModelSection) if line.startswith("# verify")]

    lines += _table("data", DataSection, {"source": values.data_source})
    lines += ["", "[data.preprocessing]  # images only: (pixel * scale - mean) / std after resize + centre crop",
              *template_lines(ImageOptions, {"scale": values.scale})]
    convert: dict[str, Any] = {"precision_mode": ConvertOptions().precision_mode}
    if values.soc_version:
        convert["soc_version"] = values.soc_version
    if values.aipp:
        convert["aipp"] = True
    if values.keep_dtype:
        convert["keep_dtype"] = values.keep_dtype
    lines += _table("convert", ConvertOptions, convert)
    lines += _table("run", RunOptions, {})
    compare: dict[str, Any] = {"labels": values.labels} if values.labels else {}
    if values.layerwise:
        compare["layerwise"] = True
    lines += _table("compare", CompareOptions, compare)
    lines += _table("tune", TuneOptions, {})
    lines += ["", "[paths]",
              f"work_dir = {toml_literal(values.work_dir)}  # model/, bins/, out/, report/ and the state file"]
    remote = template_lines(RemoteOptions)
    host = next(line for line in remote if line.startswith("# host"))
    lines += ["", "# ATC, msame and ais_bench on an Ascend host over SSH (docs/remote.md): with [remote] and its host,",
              "# convert and run run there, the other stages here.", "# [remote]",
              '# host = "ascend01"'.ljust(host.index("  # ")) + host[host.index("  # "):],
              *(line for line in remote if line != host)]
    return "\n".join(lines) + "\n"


def write_template(path: Path, values: TemplateValues, *, force: bool = False) -> Path:
    path = Path(path)
    check_output(path, force=force)
    write_bytes_atomic(path, render_template(values).encode())
    return path


def values_from_model(model: Path, *, data_source: str = "images/", labels: str = "",
                      relative_to: Path | None = None) -> TemplateValues:
    """Inspects `model` (imports TensorFlow): its best output candidate, the placeholders that output reads
    (a training graph's `labels` placeholder is left out), and its switches."""
    import os

    loaded = load_source(model)
    report = inspect_loaded(loaded)
    # A SavedModel's signature says what it answers and takes: every output, named by its key, as freeze
    # accepts them; elsewhere the best candidate.
    keyed = tuple(c for c in report.candidates if c.signature_key)
    chosen = keyed or report.candidates[:1]
    outputs = tuple(c.signature_key or c.tensor for c in chosen)
    needed = feed_tensors_read(loaded.graph_def, reachable(loaded.graph_def, [node_name(c.tensor) for c in chosen]))
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
        target, folder = Path(os.path.abspath(path)), Path(os.path.abspath(relative_to))
        # Outside the file's folder, absolute: the file takes a relative path with '..' for a mistake.
        written = os.path.relpath(target, folder) if target.is_relative_to(folder) else str(target)
        return written + ("/" if path.endswith("/") else "")

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

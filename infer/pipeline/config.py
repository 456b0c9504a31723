"""``pipeline.toml``: every stage's settings in one file, read into the stages' own options.

Each table is a stage's options dataclass ([convert] is ConvertOptions, [run] RunOptions, [compare] CompareOptions,
[tune] TuneOptions, [data.preprocessing] ImageOptions; [model] and [data] hold freeze's and dump-bin's options
beside the source), so a key means what the flag of the same field means, with its default. A mistake in the file
is one line naming the file, the key and what was expected: an unknown key (with the closest valid key suggested),
a value of the wrong type, a file that is not there. Relative paths are taken relative to the file's folder, so a
pipeline folder can be moved as a whole; every table is read by `infer.pipeline._decode`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.errors import InferError, excerpt, first_line
from binio.names import node_name
from binio.reading import check_depth, read_text_file, reading, too_deep
from binio.regular import special_kind
from binio.texts import close_matches
from infer._option_fields import setting, type_name
from infer.compare.options import CompareOptions
from infer.convert.options import ConvertOptions
from infer.dump_bin.options import DumpOptions
from infer.freeze.options import FreezeOptions
from infer.pipeline._decode import ConfigError, contained_path, decode_table
from infer.preprocessing import ImageOptions
from infer.remote.options import RemoteOptions
from infer.run.options import RunOptions
from infer.tune.options import TuneOptions

__all__ = ["GENERATOR_PREFIXES", "PRECISION_FILES", "ConfigError", "DataSection", "ModelSection", "PathsSection",
           "PipelineConfig", "check_files", "config_from_dict", "load_config"]

GENERATOR_PREFIXES = ("const:", "random:")
# [convert]'s per-op precision files, named as ConvertOptions' fields and as the section's keys.
PRECISION_FILES: tuple[str, ...] = ("keep_dtype", "modify_mixlist", "customize_dtypes")

PIPELINE_FILE_LIMIT = 4 * 2**20  # bytes: a pipeline file is a few tables of options, a few kB


@dataclass(frozen=True)
class ModelSection:
    """[model]: the model source, and `infer freeze`'s options (outputs, inputs, batch, set, verify) beside it."""

    source: str = setting(help="A checkpoint prefix or folder, a .meta, a frozen .pb, a SavedModel folder or a "
                               "Keras file.")
    freeze: FreezeOptions = setting(default_factory=FreezeOptions, inline=True)

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.freeze.outputs


@dataclass(frozen=True)
class DataSection:
    """[data]: the data source, and `infer dump-bin`'s options beside it ([data.preprocessing]: the images')."""

    source: str = setting(help="An image folder, an .npy/.npz, a folder of .bin files, or const:VALUE / "
                               "random:SEED.")
    dump: DumpOptions = setting(default_factory=DumpOptions, inline=True)


@dataclass(frozen=True)
class PathsSection:
    work_dir: str = setting("work", help="model/, bins/, out/, report/ and the pipeline's state file go here.")


@dataclass(frozen=True)
class PipelineConfig:
    path: Path  # the pipeline file; relative paths in it are resolved against its folder
    model: ModelSection
    data: DataSection
    convert: ConvertOptions = field(default_factory=ConvertOptions)
    run: RunOptions = field(default_factory=RunOptions)
    compare: CompareOptions = field(default_factory=CompareOptions)
    tune: TuneOptions = field(default_factory=TuneOptions)
    paths: PathsSection = field(default_factory=PathsSection)
    remote: RemoteOptions | None = None  # [remote]: ATC, msame and ais_bench on an Ascend host over SSH

    @property
    def folder(self) -> Path:
        return self.path.resolve().parent

    def resolve(self, value: str, where: str = "") -> Path:
        """`value` as the file names it: absolute as written, relative inside the file's folder (`contained_path`:
        no ``..``). `where` names the key in a refusal."""
        return contained_path(value, self.path, f"{self.path}: {where}" if where else str(self.path))

    @property
    def work_dir(self) -> Path:
        return self.resolve(self.paths.work_dir, "[paths] work_dir")

    @property
    def model_source(self) -> Path:
        return self.resolve(self.model.source, "[model] source")

    @property
    def data_source(self) -> str:
        """A path, resolved; a generator (``random:0``) as written."""
        if self.data.source.startswith(GENERATOR_PREFIXES):
            return self.data.source
        return str(self.resolve(self.data.source, "[data] source"))

    @property
    def labels(self) -> Path | None:
        return self.compare.labels


# Each table is a stage's own options ([model] and [data] with the source beside them): a key is its flag's field.
_SECTIONS: dict[str, type] = {
    "model": ModelSection, "data": DataSection, "convert": ConvertOptions, "run": RunOptions,
    "compare": CompareOptions, "tune": TuneOptions, "paths": PathsSection, "remote": RemoteOptions,
}


def config_from_dict(document: dict[str, Any], path: Path) -> PipelineConfig:
    """The config a parsed TOML document describes, refusing unknown keys and wrong types one line at a time."""
    sections = {}
    for key, value in document.items():
        if key not in _SECTIONS:
            close = close_matches(key, list(_SECTIONS), cutoff=0.5)
            suggestion = f"; did you mean [{close[0]}]?" if close else ""
            raise ConfigError(f"{path}: unknown section [{excerpt(key)[1:-1]}]{suggestion} (sections: "
                              f"{', '.join(_SECTIONS)})")
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: {key} must be a [{key}] table, got {type_name(value)} {value!r}")
        if key == "convert" and value.get("aipp") is True and "aipp_config" in value:
            raise ConfigError(f"{path}: [convert] aipp = true and aipp_config: aipp makes the config from "
                              "[data.preprocessing], aipp_config reads a written one; give one of them")
        sections[key] = decode_table(_SECTIONS[key], value, path, key)
    for required in ("model", "data"):
        if required not in sections:
            raise ConfigError(f"{path}: missing section [{required}]", hint="infer pipeline init writes a template")
    if "remote" in sections and not sections["remote"].host:
        raise ConfigError(f"{path}: [remote] host: missing (the Ascend host, [USER@]HOST[:PORT] or a ~/.ssh/config "
                          "alias)", hint="remove [remote] to run every stage here")
    config = PipelineConfig(path=path, **sections)
    _resolve_paths(config)
    if not config.model.outputs:
        raise ConfigError(f"{path}: [model] outputs: missing (the tensors the converted model returns)",
                          hint="infer inspect MODEL ranks the candidates")
    _check_thresholds(config, document)
    return config


def _resolve_paths(config: PipelineConfig) -> tuple[Path, Path, str]:
    """The work folder and the sources, resolved once when the file is read: a relative path that leaves the file's
    folder is refused now, not stages later (the Path keys were resolved as they were decoded)."""
    return config.work_dir, config.model_source, config.data_source


def _check_thresholds(config: PipelineConfig, document: dict[str, Any]) -> None:
    """Refuses a threshold on an unknown output when the file is read, not after five stages ran; the key is named
    as the file writes it."""
    outputs = {node_name(o) for o in config.model.outputs}
    for table in ("compare", "tune"):
        written = document.get(table, {}).get("thresholds", {})
        for key, limit in zip(written, getattr(config, table).thresholds.settings, strict=False):
            if limit.output is not None and node_name(limit.output) not in outputs:
                raise ConfigError(f"{config.path}: [{table}] thresholds.{key}: no output named {limit.output!r}; "
                                  f"[model] outputs are: {', '.join(config.model.outputs)}")


def _exists_as_model(path: Path) -> bool:
    """A file, a folder, or a checkpoint prefix (``model.ckpt`` of ``model.ckpt.index``)."""
    return path.exists() or Path(f"{path}.index").is_file() or Path(f"{path}.meta").is_file()


def check_files(config: PipelineConfig) -> None:
    """Refuses a config whose model, data or labels file is not there, before any stage starts."""
    try:
        _check_files(config)
    except OSError as exc:  # a name the system refuses to look up (too long, a component that is a file)
        raise ConfigError(f"{config.path}: {exc.filename}: {exc.strerror or exc}") from None


def _check_files(config: PipelineConfig) -> None:
    if not _exists_as_model(config.model_source):
        raise ConfigError(f"{config.path}: [model] source: no such file, folder or checkpoint prefix: "
                          f"{config.model_source}")
    if not config.data.source.startswith(GENERATOR_PREFIXES) and not Path(config.data_source).exists():
        raise ConfigError(f"{config.path}: [data] source: no such file or folder: {config.data_source}")
    convert = config.convert
    aipp = convert.aipp
    named = {"[compare] labels": config.labels, "[convert] fusion_switch_file": convert.fusion_switch_file,
             "[convert] aipp_config": aipp.config if aipp is not None else None,
             **{f"[convert] {key}": getattr(convert, key) for key in PRECISION_FILES}}
    for key, path in named.items():
        if path is None:
            continue
        kind = special_kind(path)  # a FIFO is named as one, not called missing
        if kind is not None:
            raise ConfigError(f"{config.path}: {key}: {path} is {kind}, not a regular file (reading it could wait "
                              "forever)")
        if not path.is_file():
            raise ConfigError(f"{config.path}: {key}: no such file: {path}")
    if convert.aipp is None and config.data.dump.image != ImageOptions():
        _refuse_unused_preprocessing(config)
    if config.tune.golden is not None and not config.tune.golden.is_dir():
        raise ConfigError(f"{config.path}: [tune] golden: no such folder: {config.tune.golden}")


def parse_toml(text: str, *, named: str) -> dict[str, Any]:
    """The TOML document `text` holds, refused by name as `binio.reading.parse_json` refuses JSON: not TOML, a
    number of thousands of digits, nested past `binio.reading.MAX_DEPTH`."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 ships no TOML reader
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    what = "a pipeline file"
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{named}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(too_deep(named, what)) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ConfigError(f"{named}: not valid TOML ({first_line(exc)})") from None
    check_depth(value, named=named, what=what, error=ConfigError)
    return value


def _refuse_unused_preprocessing(config: PipelineConfig) -> None:
    """[data.preprocessing] with a source that is not a folder of images (and no AIPP to declare it for): dump-bin
    would refuse it stages later; said now, in the file's words."""
    # dump_bin's source readers import numpy, which reading a pipeline file does not need otherwise.
    from infer.dump_bin import refuse_unused_preprocessing

    try:
        refuse_unused_preprocessing(config.data.dump.image, [config.data_source])
    except InferError as exc:
        raise ConfigError(f"{config.path}: [data.preprocessing]: applies to a folder of images only; [data] source "
                          f"{config.data.source!r} is not one, and its values are written as they are",
                          hint="remove [data.preprocessing], or apply it to the array before") from exc


def load_config(path: Path | str, *, check: bool = True) -> PipelineConfig:
    """Reads and checks a pipeline file; with `check`, the files it names must exist."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{path}: no such pipeline file", hint="infer pipeline init writes one")
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder, expected a pipeline .toml file")
    text = read_text_file(path, what="a pipeline .toml file", error=ConfigError, limit=PIPELINE_FILE_LIMIT)
    document = parse_toml(text, named=str(path))
    with reading(path):
        config = config_from_dict(document, path)
        if check:
            check_files(config)
    return config

"""``pipeline.toml``: every stage's settings in one file, read into frozen dataclasses.

A mistake in the file is one line naming the file, the key and what was expected: an unknown key (with the
closest valid key suggested), a value of the wrong type, a file that is not there. Relative paths are taken
relative to the file's folder, so a pipeline folder can be moved as a whole. [run] and [data.preprocessing] are
`infer run`'s RunOptions and dump-bin's ImageOptions themselves; every table is read by `infer.pipeline._decode`.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.spec import node_name
from infer._option_fields import options_from, setting
from infer.compare.options import CompareOptions
from infer.compare.thresholds import ThresholdError, Thresholds, parse_threshold
from infer.pipeline._decode import ConfigError, decode_table, type_name
from infer.preprocessing import ImageOptions
from infer.run.options import RunOptions

__all__ = ["GENERATOR_PREFIXES", "PRECISION_FILES", "CompareSection", "ConfigError", "ConvertSection", "DataSection",
           "ModelSection", "PathsSection", "PipelineConfig", "check_files", "config_from_dict", "load_config"]

GENERATOR_PREFIXES = ("const:", "random:")


def _set_table(value: Any, where: str) -> dict[str, str]:
    """``set = { is_training = false }``: TOML booleans and numbers are fine here; freeze takes text."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of name = value, got {type_name(value)} {value!r}")
    folded: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, bool):
            folded[str(name)] = "true" if item else "false"
        elif isinstance(item, (int, float, str)):
            folded[str(name)] = str(item)
        else:
            raise ConfigError(f"{where}.{name}: expected a boolean, number or string, got {type_name(item)}")
    return folded


def _thresholds_table(value: Any, where: str) -> dict[str, float | None]:
    """``thresholds = { cosine = 0.999, kl = "off" }``: a number, or "off" (None) to lift msit's default."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of metric = number, got {type_name(value)} {value!r}")
    limits: dict[str, float | None] = {}
    for key, limit in value.items():
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            limits[str(key)] = float(limit)
        elif limit == "off":
            limits[str(key)] = None
        else:
            raise ConfigError(f"{where}.{key}: expected a number or \"off\", got {type_name(limit)} {limit!r}")
    return limits


@dataclass(frozen=True)
class ModelSection:
    """What `infer freeze` needs: the source and the node names, fixed once here."""

    source: str = setting(flag=False)  # checkpoint prefix or folder, .meta, .pb, SavedModel folder, Keras file
    outputs: tuple[str, ...] = setting()
    inputs: tuple[str, ...] = ()  # freeze's --inputs syntax (name, or name:0[1,224,224,3] or with a dtype)
    batch: int = setting(1, always=True)  # freeze's own default leaves the batch as the graph has it
    # placeholders folded to a value (is_training = "false")
    set: dict[str, str] = setting(default_factory=dict, decode=_set_table, repeat=True)


@dataclass(frozen=True)
class DataSection:
    """What `infer dump-bin` needs."""

    source: str = setting(flag=False)  # image folder, .npy, .npz, bin folder, const:VALUE or random:SEED
    dtype: str = setting("", help='"" = the converted model\'s input dtype; anything else must equal it')
    layout: str = setting("", help='NHWC | NCHW for images; "" = the model\'s')
    allow_lossy: bool = setting(False, help="write values the cast loses (fp16 overflow, NaN) instead of refusing")
    preprocessing: ImageOptions = setting(default_factory=ImageOptions, flag=False)  # [data.preprocessing]


# [convert]'s per-op precision files, named as ConvertOptions' fields and as the section's keys.
PRECISION_FILES: tuple[str, ...] = ("keep_dtype", "modify_mixlist", "customize_dtypes")
AIPP_KEYS: tuple[str, ...] = ("aipp_input_format", "aipp_src_size", "aipp_crop", "aipp_csc")


@dataclass(frozen=True)
class ConvertSection:
    """What `infer convert` needs; empty strings leave ATC's defaults."""

    target: str = setting("auto", help="om where ATC is installed, else onnx (the ONNX Runtime stand-in)")
    soc_version: str = setting("", help="the chip ATC compiles for (npu-smi info names it); an om needs one")
    precision_mode: str = setting("force_fp16", always=True,  # the report's command says which mode it ran
                                  help="force_fp32 | allow_fp32_to_fp16 | must_keep_origin_dtype | "
                                       "allow_mix_precision")
    input_fp16_nodes: str = setting("", help='"a;b": these inputs take float16 bins')
    output_type: str = setting("", help='FP32 | FP16 | "node:0:FP16;..."')
    input_format: str = setting("", help='NHWC | NCHW | ND; "" = from the model')
    op_select_implmode: str = setting("", help="high_precision | high_performance | ...")
    atc_args: tuple[str, ...] = setting((), flag="--atc-arg", repeat=True, help="more ATC flags, passed as they are")
    opset: int = setting(0, help="stand-in: 0 = the highest tf2onnx and onnxruntime both handle")
    # AIPP: the NPU preprocesses uint8 images with [data.preprocessing]'s settings (one source of truth)
    aipp: bool = setting(False, help="the NPU does [data.preprocessing] on uint8 images")
    # a hand-written aipp.cfg (relative to this file) instead of [data.preprocessing]
    aipp_config: str = setting("", help="a hand-written AIPP config instead (relative to this file)")
    aipp_input_format: str = setting("", help="RGB888_U8 | YUV420SP_U8 | XRGB8888_U8 | YUV400_U8")
    aipp_src_size: tuple[int, ...] = setting((), help="[width, height] of the uint8 source; [] = the model "
                                                      "input's size")
    aipp_crop: tuple[int, ...] = setting((), help="[x, y] of the crop window; [] = centred")
    aipp_csc: str = setting("", help='YUV420SP_U8: jpeg | bt601n | bt601w | bt709n | bt709w; "" = jpeg')
    # ATC's per-op precision files (relative to this file): passed to ATC, emulated by the stand-in
    keep_dtype: str = setting("", help="ATC's keep_dtype file (from infer tune-precision): ops kept in fp32")
    modify_mixlist: str = setting("", help="ATC's modify_mixlist JSON (allow_mix_precision only)")
    customize_dtypes: str = setting("", help="ATC's customize_dtypes file")


@dataclass(frozen=True)
class CompareSection:
    """What `infer compare` needs."""

    # txt (one class index per line) or npy; "" = no accuracy figures
    labels: str = setting("", help="class indices (a line each, or .npy) or 'name label' lines")
    topk: int = setting(5, help="k of top-k agreement and accuracy")
    # cosine = 0.99; kl = "off" (None) lifts it
    thresholds: dict[str, float | None] = setting(default_factory=dict, decode=_thresholds_table,
                                                  flag="--threshold", repeat=True)
    layerwise: bool = setting(False, help="stand-in only: find the first layer whose outputs diverge")
    # compare --allow-same-backend: a [run] backend = "tf" compared with TF
    allow_same_backend: bool = setting(False, help='compare a [run] backend = "tf" with TF, on purpose')
    # compare --expected-from-emulation / --no-expected-from-emulation; left out: on for an om with the stand-in
    expected_from_emulation: bool | None = setting(
        None, example=True, negative="--no-expected-from-emulation",
        help="error against the stand-in's emulated precision (default: om only)")
    expected_factor: float = setting(10.0, help="how many times the emulated error an output may reach")
    fail_on_expected: bool = setting(False, help="an output past that factor fails the run")

    def check(self) -> None:
        """Refuses what `infer compare` refuses (topk 0, a factor under 1...), through CompareOptions' own check
        (the thresholds are checked against the outputs once [model] is read)."""
        options_from(CompareOptions, self, labels=None, thresholds=Thresholds())

    @property
    def threshold_texts(self) -> tuple[str, ...]:
        """The thresholds as `infer compare --threshold` takes them: ``cosine=0.99``, ``kl=off``."""
        return tuple(f"{key}={'off' if limit is None else repr(limit)}" for key, limit in self.thresholds.items())


@dataclass(frozen=True)
class PathsSection:
    work_dir: str = "work"  # model/, bins/, out/, report/ and the pipeline's state file go here


@dataclass(frozen=True)
class PipelineConfig:
    path: Path  # the pipeline file; relative paths in it are resolved against its folder
    model: ModelSection
    data: DataSection
    convert: ConvertSection = field(default_factory=ConvertSection)
    run: RunOptions = field(default_factory=RunOptions)
    compare: CompareSection = field(default_factory=CompareSection)
    paths: PathsSection = field(default_factory=PathsSection)

    @property
    def folder(self) -> Path:
        return self.path.resolve().parent

    def resolve(self, value: str) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.folder / path

    @property
    def work_dir(self) -> Path:
        return self.resolve(self.paths.work_dir)

    @property
    def model_source(self) -> Path:
        return self.resolve(self.model.source)

    @property
    def data_source(self) -> str:
        """A path, resolved; a generator (``random:0``) as written."""
        if self.data.source.startswith(GENERATOR_PREFIXES):
            return self.data.source
        return str(self.resolve(self.data.source))

    @property
    def labels(self) -> Path | None:
        return self.resolve(self.compare.labels) if self.compare.labels else None


_SECTIONS: dict[str, type] = {
    "model": ModelSection, "data": DataSection, "convert": ConvertSection, "run": RunOptions,
    "compare": CompareSection, "paths": PathsSection,
}


def _toml_loads(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 ships no TOML reader
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    return tomllib.loads(text)


def config_from_dict(document: dict[str, Any], path: Path) -> PipelineConfig:
    """The config a parsed TOML document describes, refusing unknown keys and wrong types one line at a time."""
    sections = {}
    for key, value in document.items():
        if key not in _SECTIONS:
            close = difflib.get_close_matches(key, list(_SECTIONS), n=1, cutoff=0.5)
            suggestion = f"; did you mean [{close[0]}]?" if close else ""
            raise ConfigError(f"{path}: unknown section [{key}]{suggestion} (sections: "
                              f"{', '.join(_SECTIONS)})")
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: {key} must be a [{key}] table, got {type_name(value)} {value!r}")
        sections[key] = decode_table(_SECTIONS[key], value, path, key)
    for required in ("model", "data"):
        if required not in sections:
            raise ConfigError(f"{path}: missing section [{required}]", hint="infer pipeline init writes a template")
    config = PipelineConfig(path=path, **sections)
    _check_thresholds(config)
    return config


def _check_thresholds(config: PipelineConfig) -> None:
    """Refuses a threshold on an unknown metric or output when the file is read, not after five stages ran."""
    outputs = config.model.outputs
    for key, text in zip(config.compare.thresholds, config.compare.threshold_texts, strict=True):
        where = f"{config.path}: [compare] thresholds.{key}"
        try:
            setting = parse_threshold(text, where=where)
        except ThresholdError as exc:
            raise ConfigError(exc.message, hint=exc.hint) from None
        if setting.output is not None and node_name(setting.output) not in {node_name(o) for o in outputs}:
            raise ConfigError(f"{where}: no output named {setting.output!r}; [model] outputs are: "
                              f"{', '.join(outputs)}")


def _exists_as_model(path: Path) -> bool:
    """A file, a folder, or a checkpoint prefix (``model.ckpt`` of ``model.ckpt.index``)."""
    return path.exists() or Path(f"{path}.index").is_file() or Path(f"{path}.meta").is_file()


def check_files(config: PipelineConfig) -> None:
    """Refuses a config whose model, data or labels file is not there, before any stage starts."""
    if not _exists_as_model(config.model_source):
        raise ConfigError(f"{config.path}: [model] source: no such file, folder or checkpoint prefix: "
                          f"{config.model_source}")
    if not config.data.source.startswith(GENERATOR_PREFIXES) and not Path(config.data_source).exists():
        raise ConfigError(f"{config.path}: [data] source: no such file or folder: {config.data_source}")
    if config.labels is not None and not config.labels.is_file():
        raise ConfigError(f"{config.path}: [compare] labels: no such file: {config.labels}")
    convert = config.convert
    for key in PRECISION_FILES:
        name = getattr(convert, key)
        if name and not config.resolve(name).is_file():
            raise ConfigError(f"{config.path}: [convert] {key}: no such file: {config.resolve(name)}")
    if convert.aipp_config and not config.resolve(convert.aipp_config).is_file():
        raise ConfigError(f"{config.path}: [convert] aipp_config: no such file: {config.resolve(convert.aipp_config)}")
    if convert.aipp and convert.aipp_config:
        raise ConfigError(f"{config.path}: [convert] aipp = true and aipp_config: aipp makes the config from "
                          "[data.preprocessing], aipp_config reads a written one; give one of them")


def load_config(path: Path | str, *, check: bool = True) -> PipelineConfig:
    """Reads and checks a pipeline file; with `check`, the files it names must exist."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such pipeline file", hint="infer pipeline init writes one") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, expected a pipeline .toml file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        document = _toml_loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    config = config_from_dict(document, path)
    if check:
        check_files(config)
    return config

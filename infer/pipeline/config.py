"""``pipeline.toml``: every stage's settings in one file, read into frozen dataclasses.

A mistake in the file is one line naming the file, the key and what was expected: an unknown key (with the
closest valid key suggested), a value of the wrong type, a file that is not there. Relative paths are taken
relative to the file's folder, so a pipeline folder can be moved as a whole.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binio.errors import InferError

GENERATOR_PREFIXES = ("const:", "random:")


class ConfigError(InferError):
    """A pipeline file that is missing, not TOML, or holds a key or value the pipeline does not take."""


@dataclass(frozen=True)
class ModelSection:
    """What `infer freeze` needs: the source and the node names, fixed once here."""

    source: str  # checkpoint prefix or folder, .meta, .pb, SavedModel folder, Keras file
    outputs: tuple[str, ...]
    inputs: tuple[str, ...] = ()  # freeze's --inputs syntax (name, or name:0[1,224,224,3] or with a dtype)
    batch: int = 1
    set: dict[str, str] = field(default_factory=dict)  # placeholders folded to a value (is_training = "false")


@dataclass(frozen=True)
class PreprocessingSection:
    """How images become samples; ignored for npy/npz/bin sources."""

    resize: int = 0  # shorter side before the centre crop; 0 = just large enough for the crop
    color: str = "RGB"  # RGB | BGR, in any case, as dump-bin's --color takes it
    scale: float = 1.0
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)

    def __post_init__(self) -> None:
        object.__setattr__(self, "color", self.color.upper())  # "bgr" is BGR, as on the command line


@dataclass(frozen=True)
class DataSection:
    """What `infer dump-bin` needs."""

    source: str  # image folder, .npy, .npz, bin folder, const:VALUE or random:SEED
    dtype: str = ""  # "" = the converted model's input dtype
    layout: str = ""  # NHWC | NCHW for images; "" = the model's
    allow_lossy: bool = False
    preprocessing: PreprocessingSection = field(default_factory=PreprocessingSection)


# [convert]'s per-op precision files, named as ConvertOptions' fields and as the section's keys.
PRECISION_FILES: tuple[str, ...] = ("keep_dtype", "modify_mixlist", "customize_dtypes")


@dataclass(frozen=True)
class ConvertSection:
    """What `infer convert` needs; empty strings leave ATC's defaults."""

    target: str = "auto"  # auto (om where ATC is found, else onnx) | om | onnx
    soc_version: str = ""  # the chip ATC compiles for; required for an om, as convert's --soc-version
    precision_mode: str = "force_fp16"  # ATC's default
    input_fp16_nodes: str = ""
    output_type: str = ""
    input_format: str = ""
    op_select_implmode: str = ""
    atc_args: tuple[str, ...] = ()
    opset: int = 0  # 0 = the highest both tf2onnx and onnxruntime handle
    # AIPP: the NPU preprocesses uint8 images with [data.preprocessing]'s settings (one source of truth)
    aipp: bool = False
    aipp_config: str = ""  # a hand-written aipp.cfg (relative to this file) instead of [data.preprocessing]
    aipp_input_format: str = ""  # RGB888_U8 | YUV420SP_U8 | XRGB8888_U8 | YUV400_U8; "" = from the channels
    aipp_src_size: tuple[int, ...] = ()  # (width, height) of the uint8 source; () = the model input's size
    aipp_crop: tuple[int, ...] = ()  # (x, y) of the crop window; () = centred
    aipp_csc: str = ""  # YUV420SP_U8: jpeg | bt601n | bt601w | bt709n | bt709w
    # ATC's per-op precision files (relative to this file): passed to ATC, emulated by the stand-in
    keep_dtype: str = ""
    modify_mixlist: str = ""
    customize_dtypes: str = ""


@dataclass(frozen=True)
class RunSection:
    """What `infer run` needs."""

    backend: str = "auto"  # auto (from what convert made) | onnxrt | tf | msame | ais_bench
    device: int | None = None  # left out: the backend's default; 0 is the first device
    loop: int = 1
    warmup: int = 1  # as run's --warmup: one untimed batch before timing starts
    threads: int = 0  # 0 = the backend's default


@dataclass(frozen=True)
class CompareSection:
    """What `infer compare` needs."""

    labels: str = ""  # txt (one class index per line) or npy; "" = no accuracy figures
    topk: int = 5
    thresholds: dict[str, float | None] = field(default_factory=dict)  # cosine = 0.99; kl = "off" (None) lifts it
    layerwise: bool = False
    allow_same_backend: bool = False  # compare --allow-same-backend: a [run] backend = "tf" compared with TF
    # compare --expected-from-emulation / --no-expected-from-emulation; left out: on for an om with the stand-in
    expected_from_emulation: bool | None = None
    expected_factor: float = 10.0  # compare --expected-factor: how many times the emulated error an output may reach
    fail_on_expected: bool = False  # compare --fail-on-expected: worse than the emulated precision fails

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
    run: RunSection = field(default_factory=RunSection)
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
    "model": ModelSection, "data": DataSection, "convert": ConvertSection, "run": RunSection,
    "compare": CompareSection, "paths": PathsSection,
}


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a table"}
    return names.get(type(value), type(value).__name__)


_PLAIN = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _expected_name(kind: Any) -> str:
    origin = typing.get_origin(kind)
    if origin is tuple:
        return f"a list of {_PLAIN[typing.get_args(kind)[0]]}s"
    if origin is dict:
        return f"a table of {_PLAIN[typing.get_args(kind)[1]]}s"
    if dataclasses.is_dataclass(kind):
        return "a table"
    name = _PLAIN[kind]
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _where(path: Path, section: str, key: str) -> str:
    return f"{path}: [{section}] {key}" if section else f"{path}: {key}"


def _convert(value: Any, kind: Any, where: str, path: Path, section: str) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        return _convert(value, options[0], where, path, section)
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, got {_type_name(value)} {value!r}")
        return _build(kind, value, path, section)  # type: ignore[arg-type]
    if origin is tuple:
        item = typing.get_args(kind)[0]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {_type_name(value)} {value!r}")
        return tuple(_convert(v, item, f"{where}[{i}]", path, section) for i, v in enumerate(value))
    if origin is dict:
        item = typing.get_args(kind)[1]
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {_type_name(value)} {value!r}")
        return {str(k): _convert(v, item, f"{where}.{k}", path, section) for k, v in value.items()}
    # TOML has real types; only an integer where a number is asked is widened (1 for 1.0).
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not kind:
        raise ConfigError(f"{where}: expected {_expected_name(kind)}, got {_type_name(value)} {value!r}")
    return value


def _build(cls: type, table: dict[str, Any], path: Path, section: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "path"}
    for key in table:
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1, cutoff=0.5)
            suggestion = f"; did you mean {close[0]!r}?" if close else ""
            valid = ", ".join(fields)
            raise ConfigError(f"{_where(path, section, key)}: unknown key{suggestion} (valid keys: {valid})")
    values: dict[str, Any] = {}
    for name, item in fields.items():
        if name not in table:
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{_where(path, section, name)}: missing (it has no default)")
            continue
        child_section = name if not section else section + "." + name
        if dataclasses.is_dataclass(hints[name]):
            values[name] = _convert(table[name], hints[name], _where(path, section, name), path, child_section)
        elif section == "model" and name == "set":
            values[name] = _set_table(table[name], _where(path, section, name))
        elif section == "compare" and name == "thresholds":
            values[name] = _thresholds_table(table[name], _where(path, section, name))
        else:
            values[name] = _convert(table[name], hints[name], _where(path, section, name), path, section)
    return cls(**values)


def _set_table(value: Any, where: str) -> dict[str, str]:
    """``set = { is_training = false }``: TOML booleans and numbers are fine here; freeze takes text."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of name = value, got {_type_name(value)} {value!r}")
    folded: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, bool):
            folded[str(name)] = "true" if item else "false"
        elif isinstance(item, (int, float, str)):
            folded[str(name)] = str(item)
        else:
            raise ConfigError(f"{where}.{name}: expected a boolean, number or string, got {_type_name(item)}")
    return folded


def _thresholds_table(value: Any, where: str) -> dict[str, float | None]:
    """``thresholds = { cosine = 0.999, kl = "off" }``: a number, or "off" (None) to lift msit's default."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of metric = number, got {_type_name(value)} {value!r}")
    limits: dict[str, float | None] = {}
    for key, limit in value.items():
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            limits[str(key)] = float(limit)
        elif limit == "off":
            limits[str(key)] = None
        else:
            raise ConfigError(f"{where}.{key}: expected a number or \"off\", got {_type_name(limit)} {limit!r}")
    return limits


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
            raise ConfigError(f"{path}: {key} must be a [{key}] table, got {_type_name(value)} {value!r}")
        sections[key] = _build(_SECTIONS[key], value, path, key)
    for required in ("model", "data"):
        if required not in sections:
            raise ConfigError(f"{path}: missing section [{required}]", hint="infer pipeline init writes a template")
    config = PipelineConfig(path=path, **sections)
    _check_preprocessing(config)
    _check_thresholds(config)
    return config


def _check_preprocessing(config: PipelineConfig) -> None:
    """Refuses a colour order dump-bin's --color would refuse, when the file is read."""
    from infer.data.sources.open import COLORS

    color = config.data.preprocessing.color
    if color not in COLORS:
        raise ConfigError(f"{config.path}: [data.preprocessing] color: expected RGB or BGR, got {color!r}")


def _check_thresholds(config: PipelineConfig) -> None:
    """Refuses a threshold on an unknown metric or output when the file is read, not after five stages ran."""
    from binio.spec import node_name
    from infer.compare.thresholds import ThresholdError, parse_threshold

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

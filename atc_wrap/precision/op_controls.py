"""ATC's per-op precision controls: `--keep_dtype`, `--modify_mixlist` and `--customize_dtypes` files, read and
checked against the pb; the precision plan (`atc_wrap.precision.plan`) applies them over the mode, per TF node.

ATC applies them in this order, a later one winning for an op it names: allow_mix_precision's lists (as
`--modify_mixlist` changes them), then `--keep_dtype` (the op keeps its original fp32), then `--customize_dtypes`
(the op's input and output dtypes as written). Op names are the TF node names of the frozen pb; op types are
Ascend IR types: the TF op types (`atc_wrap.precision.op_types`), or the Ascend ops the operator tables map them to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from atc_wrap.errors import ConvertError
from atc_wrap.precision.modes import KEEP_DTYPE_MODES
from atc_wrap.precision.op_types import closest, known_op_types
from binio.atomic import write_bytes_atomic
from binio.errors import excerpt
from binio.graph_types import GraphDef
from binio.reading import parse_json, read_text_file

OP_TYPE_PREFIX = "OpType::"
MIXLIST_KEYS: tuple[str, ...] = ("black-list", "white-list", "gray-list")
MIXLIST_CHANGES: tuple[str, ...] = ("to-add", "to-remove")
# ATC's dtype spellings in --customize_dtypes; the stand-in emulates the float ones.
CUSTOM_DTYPES: Mapping[str, str] = {"float": "float32", "float32": "float32", "float16": "float16",
                                    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
                                    "uint8": "uint8", "bool": "bool", "bfloat16": "bfloat16"}
EMULATED_DTYPES: tuple[str, ...] = ("float32", "float16")
MIXLIST_MODE = "allow_mix_precision"
# How an op computes on the stand-in: fp32 (kept), fp16 (inputs cast to fp16, outputs rounded), follow (as what it
# reads: a gray op, or fp16 in and fp32 out), legacy (the mode alone says, as before the operator tables).
Compute = Literal["fp32", "fp16", "follow", "legacy"]
# What said so: one of the user's controls, the precision plan, or the fallback for an op the plan cannot place.
RuleSource = Literal["modify_mixlist", "keep_dtype", "customize_dtypes", "plan", "fallback"]


@dataclass(frozen=True)
class OpEntries:
    """Op names and ``OpType::`` types, in the file's order."""

    names: tuple[str, ...] = ()
    types: tuple[str, ...] = ()


@dataclass(frozen=True)
class MixlistChanges:
    """`--modify_mixlist`: per list (black, white, gray), the op types added and removed."""

    added: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    removed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def types(self) -> tuple[str, ...]:
        return tuple(t for kind in MIXLIST_KEYS for t in (*self.added.get(kind, ()), *self.removed.get(kind, ())))

    def to_json(self) -> dict[str, Any]:
        return {kind: {"to-add": list(self.added.get(kind, ())), "to-remove": list(self.removed.get(kind, ()))}
                for kind in MIXLIST_KEYS if self.added.get(kind) or self.removed.get(kind)}


@dataclass(frozen=True)
class DtypeRule:
    """One `--customize_dtypes` line: an op (by name, or every op of a type) and its input/output dtypes."""

    target: str
    by_type: bool
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]

    def describe(self) -> str:
        what = f"{OP_TYPE_PREFIX}{self.target}" if self.by_type else self.target
        return f"{what}: inputs {','.join(self.input_dtypes) or '-'}, outputs {','.join(self.output_dtypes) or '-'}"


@dataclass(frozen=True)
class OpControls:
    """The three files as read; empty where not given."""

    keep_dtype: OpEntries = field(default_factory=OpEntries)
    mixlist: MixlistChanges = field(default_factory=MixlistChanges)
    customize: tuple[DtypeRule, ...] = ()
    texts: Mapping[str, str] = field(default_factory=dict)  # each given file's text, keyed as model.json records it

    def __bool__(self) -> bool:
        return bool(self.keep_dtype.names or self.keep_dtype.types or self.mixlist.types() or self.customize)


@dataclass(frozen=True)
class OpPrecision:
    """How one TF node computes on the stand-in, and which control said so."""

    node: str
    op_type: str
    compute: Compute
    source: RuleSource
    input_dtypes: tuple[str, ...] = ()  # customize_dtypes: per input of the op; () = by `compute`
    output_dtypes: tuple[str, ...] = ()


def _read_text(path: Path, flag: str, *, what: str) -> str:
    return read_text_file(Path(path), what=what, error=ConvertError, named=f"{flag} {path}")


MAX_LINE = 4096  # characters of a line naming an op (or an op type and dtypes): TF's longest scoped names are far less


def _lines(text: str, where: str) -> list[tuple[int, str]]:
    """The lines that say something (blank and ``#`` lines skipped), each refused, by number, past `MAX_LINE`
    characters: no op name is that long, and a suggestion for one would cost quadratic time."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if len(line) > MAX_LINE:
            raise ConvertError(f"{where}:{number}: a line of {len(line):,} characters ({excerpt(line)}); no op "
                               f"name is longer than {MAX_LINE}")
        if line and not line.startswith("#"):
            found.append((number, line))
    return found


def parse_keep_dtype(text: str, path: Path) -> OpEntries:
    """ATC's keep_dtype file: one op name or ``OpType::TypeName`` a line (blank lines and ``#`` lines skipped)."""
    names: list[str] = []
    types: list[str] = []
    for number, line in _lines(text, f"--keep-dtype {path}"):
        if line.startswith(OP_TYPE_PREFIX):
            kind = line[len(OP_TYPE_PREFIX):].strip()
            if not kind:
                raise ConvertError(f"--keep-dtype {path}:{number}: {excerpt(line)} names no op type, e.g. OpType::Relu")
            types.append(kind)
        elif "::" in line:
            raise ConvertError(f"--keep-dtype {path}:{number}: {excerpt(line)}: expected an op name or "
                               "OpType::TypeName")
        else:
            names.append(line)
    return OpEntries(names=tuple(dict.fromkeys(names)), types=tuple(dict.fromkeys(types)))


def write_keep_dtype(path: Path, names: Iterable[str]) -> Path:
    """A keep_dtype file of op names, one a line, written atomically."""
    write_bytes_atomic(Path(path), "".join(f"{name}\n" for name in names).encode())
    return Path(path)


def parse_modify_mixlist(text: str, path: Path) -> MixlistChanges:
    """ATC's modify_mixlist JSON: ``{"black-list": {"to-add": [...], "to-remove": [...]}, "white-list": ...}``."""
    flag = f"--modify-mixlist {path}"
    data = parse_json(text, named=flag, what="a modify_mixlist JSON file", error=ConvertError)
    if not isinstance(data, dict):
        raise ConvertError(f"{flag}: expected a JSON object with {', '.join(MIXLIST_KEYS)}, found "
                           f"{type(data).__name__}")
    added: dict[str, tuple[str, ...]] = {}
    removed: dict[str, tuple[str, ...]] = {}
    for kind, changes in data.items():
        if kind not in MIXLIST_KEYS:
            raise ConvertError(f"{flag}: unknown key {excerpt(kind)}; expected {', '.join(MIXLIST_KEYS)}")
        if not isinstance(changes, dict):
            raise ConvertError(f"{flag}: {kind} must be an object with to-add / to-remove lists")
        for change, types in changes.items():
            if change not in MIXLIST_CHANGES:
                raise ConvertError(f"{flag}: {kind}: unknown key {excerpt(change)}; expected to-add or to-remove")
            if not isinstance(types, list) or not all(isinstance(t, str) and t.strip() for t in types):
                raise ConvertError(f"{flag}: {kind}.{change} must be a list of op type names")
            target = added if change == "to-add" else removed
            target[kind] = tuple(t.strip() for t in types)
    twice = [t for t in {t for v in added.values() for t in v} if sum(t in v for v in added.values()) > 1]
    if twice:
        raise ConvertError(f"{flag}: {', '.join(sorted(twice))} added to more than one list")
    return MixlistChanges(added=added, removed=removed)


def _dtypes(text: str, where: str) -> tuple[str, ...]:
    found = []
    for raw in (p.strip() for p in text.split(",")):
        dtype = CUSTOM_DTYPES.get(raw.lower())
        if dtype is None:
            raise ConvertError(f"{where}: dtype {excerpt(raw)} is not one of {', '.join(CUSTOM_DTYPES)}")
        found.append(dtype)
    return tuple(found)


def parse_customize_dtypes(text: str, path: Path) -> tuple[DtypeRule, ...]:
    """``Opname::InputDtype:dt,...,OutputDtype:dt,...`` and ``OpType::Type:InputDtype:...,OutputDtype:...``."""
    rules = []
    for number, line in _lines(text, f"--customize-dtypes {path}"):
        where = f"--customize-dtypes {path}:{number}"
        if line.startswith(OP_TYPE_PREFIX):
            target, _, spec = line[len(OP_TYPE_PREFIX):].partition(":")
            by_type = True
        else:
            target, sep, spec = line.partition("::")
            by_type = False
            if not sep:
                raise ConvertError(f"{where}: {excerpt(line)}: expected Opname::InputDtype:...,OutputDtype:... or "
                                   "OpType::TypeName:InputDtype:...,OutputDtype:...")
        inputs, outputs = _dtype_lists(spec, where, line)
        if not target.strip():
            raise ConvertError(f"{where}: {excerpt(line)} names no op")
        rules.append(DtypeRule(target=target.strip(), by_type=by_type, input_dtypes=inputs, output_dtypes=outputs))
    return tuple(rules)


def _dtype_lists(spec: str, where: str, line: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for token in (t.strip() for t in spec.split(",")):
        for key in ("InputDtype", "OutputDtype"):
            if token.startswith(f"{key}:"):
                if key in parts:
                    raise ConvertError(f"{where}: {excerpt(line)}: {key} given twice")
                current = parts.setdefault(key, [])
                token = token[len(key) + 1:]
                break
        if current is None or not token:
            raise ConvertError(f"{where}: {excerpt(line)}: expected InputDtype:dt,...,OutputDtype:dt,...")
        current.append(token)
    if not parts:
        raise ConvertError(f"{where}: {excerpt(line)}: expected InputDtype:dt,...,OutputDtype:dt,...")
    return (_dtypes(",".join(parts.get("InputDtype", [])), where) if "InputDtype" in parts else (),
            _dtypes(",".join(parts.get("OutputDtype", [])), where) if "OutputDtype" in parts else ())


# The file each control is replayed from (the expected-error band's emulation), keyed as model.json records them.
CONTROL_FILE_NAMES: Mapping[str, str] = {"keep_dtype": "keep_dtype.cfg", "modify_mixlist": "modify_mixlist.json",
                                         "customize_dtypes": "customize_dtypes.cfg"}


def read_op_controls(keep_dtype: Path | None, modify_mixlist: Path | None,
                     customize_dtypes: Path | None) -> OpControls:
    """The given control files, each read once: parsed, and their texts kept as model.json records them (so the
    conversion can be replayed)."""
    texts: dict[str, str] = {}
    if keep_dtype is not None:
        texts["keep_dtype"] = _read_text(keep_dtype, "--keep-dtype", what="a keep_dtype file")
    if modify_mixlist is not None:
        texts["modify_mixlist"] = _read_text(modify_mixlist, "--modify-mixlist", what="a modify_mixlist JSON file")
    if customize_dtypes is not None:
        texts["customize_dtypes"] = _read_text(customize_dtypes, "--customize-dtypes", what="a customize_dtypes file")
    return OpControls(
        keep_dtype=parse_keep_dtype(texts["keep_dtype"], keep_dtype) if keep_dtype is not None else OpEntries(),
        mixlist=(parse_modify_mixlist(texts["modify_mixlist"], modify_mixlist) if modify_mixlist is not None
                 else MixlistChanges()),
        customize=(parse_customize_dtypes(texts["customize_dtypes"], customize_dtypes)
                   if customize_dtypes is not None else ()),
        texts=texts,
    )


def check_mixlist_mode(modify_mixlist: Path | str | None, precision_mode: str) -> None:
    """ATC's guide documents --modify_mixlist for mixed precision only (the one mode with lists to change): with
    any other mode it could change nothing, so it is refused rather than silently ignored."""
    if modify_mixlist is not None and precision_mode != MIXLIST_MODE:
        raise ConvertError(f"--modify-mixlist {modify_mixlist}: ATC takes it only with --precision-mode "
                           f"{MIXLIST_MODE}, not {precision_mode}".replace("  ", " "),
                           hint=f"--precision-mode {MIXLIST_MODE}, or --keep-dtype to keep ops in fp32 in any mode")


def check_against_graph(controls: OpControls, graph_def: GraphDef, pb: Path, ascend_types: Iterable[str] = ()) -> None:
    """Every op name must be a node of the pb and every op type a known one (a TF type, or an Ascend op type one of
    the pb's TF types becomes: `ascend_types`); refused with the closest named."""
    ops = {node.name: node.op for node in graph_def.node}
    types = known_op_types(ops.values()) | frozenset(ascend_types)
    names = [(n, "--keep-dtype") for n in controls.keep_dtype.names]
    names += [(r.target, "--customize-dtypes") for r in controls.customize if not r.by_type]
    for name, flag in names:
        if name not in ops:
            raise ConvertError(f"{flag}: op {excerpt(name)} is not a node of {pb} ({len(ops)} nodes)"
                               f"{closest(name, ops)}",
                               hint="op names are the frozen pb's TF node names; infer inspect lists them")
    kinds = [(t, "--keep-dtype") for t in controls.keep_dtype.types]
    kinds += [(t, "--modify-mixlist") for t in controls.mixlist.types()]
    kinds += [(r.target, "--customize-dtypes") for r in controls.customize if r.by_type]
    for kind, flag in kinds:
        if kind not in types:
            raise ConvertError(f"{flag}: op type {excerpt(kind)} is neither an Ascend IR type the stand-in maps nor a "
                               f"type in {pb}{closest(kind, types)}",
                               hint="an OpType:: entry names a TF op type of the pb (Conv2D, Relu, Sum) or the Ascend "
                                    "op ATC makes of it (ReduceSumD, SoftmaxV2: infer inspect model.json --precision "
                                    "lists them)")


def check_emulated_dtypes(controls: OpControls) -> None:
    """The stand-in rounds floats; an integer or bfloat16 dtype in --customize-dtypes is ATC's to apply."""
    for rule in controls.customize:
        other = [d for d in (*rule.input_dtypes, *rule.output_dtypes) if d not in EMULATED_DTYPES]
        if other:
            raise ConvertError(f"--customize-dtypes {rule.describe()}: the ONNX stand-in emulates float32 and "
                               f"float16 only, not {', '.join(dict.fromkeys(other))}",
                               hint="--target om passes the file to ATC")


def check_op_controls(controls: OpControls, graph_def: GraphDef, pb: Path, *, emulated: bool,
                      ascend_types: Iterable[str] = ()) -> None:
    """Checks the controls against the pb (names, and types among the TF types and the Ascend op types they reach,
    `ascend_types`) and, for the stand-in, against what it emulates. What they do to each op is the precision
    plan's to say (`atc_wrap.precision.plan`), in ATC's order: the mixed-precision lists as --modify-mixlist
    changes them, then --keep-dtype, then --customize-dtypes. (That --modify-mixlist comes with its one mode was
    checked with the options: `check_mixlist_mode`.)"""
    if not controls:
        return
    check_against_graph(controls, graph_def, pb, ascend_types)
    if emulated:
        check_emulated_dtypes(controls)


def ignored_controls(controls: OpControls, precision_mode: str) -> tuple[str, ...]:
    """Why a given control changes nothing under this mode (ATC ignores --keep_dtype there), one text each."""
    keep = controls.keep_dtype
    if (keep.names or keep.types) and precision_mode not in KEEP_DTYPE_MODES:
        why = ("ATC ignores it under must_keep_origin_dtype" if precision_mode == "must_keep_origin_dtype"
               else f"every op is fp32 already under {precision_mode}")
        return (f"--keep-dtype has no effect: {why}",)
    return ()


def controls_record(controls: OpControls, ignored: tuple[str, ...]) -> dict[str, Any]:
    """The control files as read, and why some change nothing (`ignored_controls`), for model.json."""
    if not controls:
        return {}
    return {"keep_dtype": {"names": list(controls.keep_dtype.names), "types": list(controls.keep_dtype.types)},
            "modify_mixlist": controls.mixlist.to_json(),
            "customize_dtypes": [r.describe() for r in controls.customize],
            "ignored": list(ignored)}

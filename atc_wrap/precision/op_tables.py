"""CANN's operator tables, per chip family: which Ascend op ATC makes of a TF op type, and its kernels.

The tables are data written by `scripts/build_op_tables.py` from a public snapshot of CANN's operator repository
and ATC's TF parser, dated in each file's `source` (docs/op-tables.md). `atc_wrap/precision/op_tables_data/common.json`
holds what is the same for every chip (the TF plugins' mapping, the parser's built-ins, the static rewrites, the
open AI CPU kernels), `<family>.json` each family's AI Core table. They say what that snapshot says: a newer CANN
may map and support more, so a refusal based on them must be one the user can override. Loading reads json only,
once per family, on first use.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from atc_wrap.errors import ConvertError

# The data files' layout; scripts/build_op_tables.py writes it and the loader refuses any other. 2: an entry's
# input/output dtype pairs, and a dynamic-format kernel's dtypes read off its op_select_format where it decides them.
TABLE_FORMAT = 2
DATA_PACKAGE = "op_tables_data"
COMMON = "common"  # the file of what every family shares
# Chip families with a table, and ATC's --soc_version spellings of the chips in each. The 2022 snapshot has no
# table for the Ascend910_93 series (it postdates it), so those chips are refused rather than guessed.
FAMILIES: tuple[str, ...] = ("ascend310", "ascend310b", "ascend310p", "ascend910", "ascend910b")
_FAMILY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ascend310p", re.compile(r"ascend310p\d*", re.IGNORECASE)),
    ("ascend310b", re.compile(r"ascend310b\d*", re.IGNORECASE)),
    ("ascend310", re.compile(r"ascend310", re.IGNORECASE)),
    ("ascend910b", re.compile(r"ascend910b\d*c?(-\d+)?", re.IGNORECASE)),
    ("ascend910", re.compile(r"ascend910(a|proa|prob|premiuma)?", re.IGNORECASE)),
)


class OpTableError(ConvertError):
    """A chip with no table, or a table file that is missing or not one this loader reads."""


@dataclass(frozen=True)
class Provenance:
    """Where a table's facts come from: a repository at one commit, and the files read there."""

    repository: str
    commit: str
    date: str  # the commit's ISO 8601 date
    paths: tuple[str, ...]


@dataclass(frozen=True)
class AiCoreKernel:
    """One Ascend op's entry in the chip's AI Core table (`aic-<soc>-ops-info.ini`).

    `input_dtypes` and `output_dtypes` are the float dtypes of its first input and output (float16, float32,
    float64, bfloat16), and `pairs` the (input, output) dtypes its columns pair (ResizeBilinearV2D on Ascend310:
    fp16 -> fp32 and fp32 -> fp32). A `dynamic_format` kernel's dtypes are chosen by its `op_select_format` at
    compile time: they are the ones that function decides on this chip, read off the implementation by
    scripts/build_op_tables.py (`from_select_format`), and None (unknown) where it does not decide them.
    `precision_reduce` is the mixed-precision list the op is on: True white (lowered to fp16), False black (kept
    fp32), None gray.
    """

    op: str
    input_dtypes: frozenset[str] | None
    output_dtypes: frozenset[str] | None
    precision_reduce: bool | None
    cube: bool
    heavy: bool
    dynamic_format: bool
    pairs: frozenset[tuple[str, str]] | None = None  # None: the columns cannot be paired, or dtypes unknown
    from_select_format: bool = False  # the dtypes come from the op's op_select_format, not the table

    @property
    def dtypes_known(self) -> bool:
        return self.input_dtypes is not None

    def computes(self, dtype: str) -> bool | None:
        """Whether the kernel takes `dtype` as its first input; None where its dtypes are not known."""
        return None if self.input_dtypes is None else dtype in self.input_dtypes

    def outputs_for(self, dtype: str) -> frozenset[str] | None:
        """The float output dtypes the kernel pairs with input dtype `dtype` (empty: it gives no float for it);
        None where its columns are not known."""
        if self.pairs is None:
            return None
        return frozenset(out for given, out in self.pairs if given == dtype)


@dataclass(frozen=True)
class OpSupport:
    """What the table says ATC does with one TF op type on the family's chips.

    `ascend_ops` are the Ascend ops the TF plugins register for the type (op -> implementation type: TVM for
    AI Core, AI_CPU, GELOCAL...); `rewrites` the static-shape rewrites of those ops to their constant-attribute
    variants (ReduceMean -> ReduceMeanD), which are what the AI Core table lists; `aicore` the kernels reached,
    rewritten op first; `aicpu` the float dtypes of the AI CPU kernels in the open `aicpu_kernel.ini` (a subset
    of CANN's: an op absent there may still have one); `parser_op` the graph op type ATC's TF parser makes of the
    type itself (Placeholder -> Data), where it does.
    """

    tf_type: str
    ascend_ops: Mapping[str, str] = field(default_factory=dict)
    rewrites: Mapping[str, str] = field(default_factory=dict)
    aicore: tuple[AiCoreKernel, ...] = ()
    aicpu: Mapping[str, frozenset[str]] = field(default_factory=dict)
    parser_op: str | None = None

    @property
    def mapped(self) -> bool:
        """Whether ATC's TF parser takes the type at all (a plugin or a built-in); without, it fails (E12011)."""
        return bool(self.ascend_ops) or self.parser_op is not None

    @property
    def parser_builtin(self) -> bool:
        return self.parser_op is not None

    @property
    def kernel(self) -> AiCoreKernel | None:
        """The AI Core kernel a static-shape graph gets: the rewritten op's where the table lists it."""
        return self.aicore[0] if self.aicore else None

    @property
    def has_aicpu(self) -> bool:
        return bool(self.aicpu)


@dataclass(frozen=True)
class OpTable:
    """One chip family's table: TF op types to what ATC makes of them, with the facts' provenance."""

    family: str
    source: Provenance  # the operator snapshot: plugins, rewrites, AI CPU kernels
    aicore_source: Provenance  # the same snapshot's AI Core table of the family
    parser_source: Provenance
    script: str
    script_version: int
    tf_ops: Mapping[str, Mapping[str, Any]]
    aicore_ops: Mapping[str, AiCoreKernel]
    aicpu_ops: Mapping[str, frozenset[str]]
    rewrites: Mapping[str, str]

    @property
    def date(self) -> str:
        """The day of the operator snapshot the table was read from (YYYY-MM-DD)."""
        return self.source.date[:10]

    @property
    def tf_types(self) -> tuple[str, ...]:
        return tuple(sorted(self.tf_ops))

    def __contains__(self, tf_type: object) -> bool:
        return tf_type in self.tf_ops

    def aicore_kernel(self, ascend_op: str) -> AiCoreKernel | None:
        return self.aicore_ops.get(ascend_op)

    def lookup(self, tf_type: str) -> OpSupport:
        """The table's facts for `tf_type`; a type it does not know gets an OpSupport that is not `mapped`."""
        entry = self.tf_ops.get(tf_type)
        if entry is None:
            return OpSupport(tf_type)
        ascend: Mapping[str, str] = entry.get("ascend", {})
        rewrites = {op: self.rewrites[op] for op in ascend if op in self.rewrites}
        reached = [name for op in sorted(ascend) for name in (rewrites.get(op), op) if name]
        kernels = tuple(self.aicore_ops[name] for name in dict.fromkeys(reached) if name in self.aicore_ops)
        return OpSupport(tf_type, dict(ascend), rewrites, kernels,
                         {op: self.aicpu_ops[op] for op in sorted(ascend) if op in self.aicpu_ops},
                         entry.get("parser"))


def family_of(soc_version: str) -> str:
    """The table family of an ATC --soc_version: Ascend310P3 -> ascend310p, Ascend910ProB -> ascend910."""
    name = soc_version.strip()
    for family, pattern in _FAMILY_PATTERNS:
        if pattern.fullmatch(name):
            return family
    close = difflib.get_close_matches(name, ("Ascend310", "Ascend310B1", "Ascend310P3", "Ascend910A",
                                             "Ascend910B2"), n=1)
    suggestion = f" (did you mean {close[0]}?)" if close else ""
    raise OpTableError(f"--soc-version {soc_version!r}: no operator table for this chip{suggestion}; tables exist "
                       f"for the families {', '.join(FAMILIES)} (Ascend310, Ascend310B*, Ascend310P*, "
                       "Ascend910/910A/910Pro*/910PremiumA, Ascend910B*)",
                       hint="the tables come from a 2022 CANN snapshot and cover these families only "
                            "(docs/op-tables.md)")


def load_op_table(family: str) -> OpTable:
    """The committed table of `family` (one of FAMILIES), read once and kept."""
    if family not in FAMILIES:
        close = difflib.get_close_matches(family, FAMILIES, n=1)
        suggestion = f" (did you mean {close[0]}?)" if close else ""
        raise OpTableError(f"operator table {family!r}: not a family with a table{suggestion}; "
                           f"families: {', '.join(FAMILIES)}")
    return _load(family)


def op_table_for(soc_version: str) -> OpTable:
    """The table of the family `soc_version` belongs to."""
    return load_op_table(family_of(soc_version))


@cache
def _load(family: str) -> OpTable:
    return parse_op_table(_read(COMMON), _read(family), _where(family), _where(COMMON))


def _where(stem: str) -> str:
    return f"atc_wrap/precision/{DATA_PACKAGE}/{stem}.json"


def _read(stem: str) -> Any:
    resource = resources.files("atc_wrap.precision") / DATA_PACKAGE / f"{stem}.json"
    try:
        return json.loads(resource.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OpTableError(f"{_where(stem)}: missing; the package was installed without its operator tables",
                           hint="reinstall infer, or regenerate them with scripts/build_op_tables.py") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OpTableError(f"{_where(stem)}: not a readable JSON operator table ({exc})") from None


def parse_op_table(common: Any, family: Any, where: str, common_where: str) -> OpTable:
    """An OpTable from the shared file's JSON and a family file's; `where` and `common_where` name the files."""
    for document, name in ((common, common_where), (family, where)):
        if not isinstance(document, dict) or document.get("format") != TABLE_FORMAT:
            found = document.get("format") if isinstance(document, dict) else type(document).__name__
            raise OpTableError(f"{name}: expected an operator table of format {TABLE_FORMAT}, found {found!r}",
                               hint="regenerate the tables with scripts/build_op_tables.py")
    try:
        source = common["source"]
        return OpTable(
            family=str(family["family"]),
            source=_provenance(source["ops"]),
            aicore_source=_provenance(family["source"]["ops"]),
            parser_source=_provenance(source["parser"]),
            script=str(source["script"]),
            script_version=int(source["script_version"]),
            tf_ops=common["tf"],
            aicore_ops={op: _kernel(op, entry) for op, entry in family["aicore"].items()},
            aicpu_ops={op: frozenset(dtypes) for op, dtypes in common["aicpu"].items()},
            rewrites={op: entry["to"] for op, entry in common["rewrites"].items()},
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise OpTableError(f"{where} with {common_where}: not a valid operator table "
                           f"({type(exc).__name__}: {exc})") from None


def _provenance(entry: Mapping[str, Any]) -> Provenance:
    return Provenance(str(entry["repository"]), str(entry["commit"]), str(entry["date"]),
                      tuple(str(path) for path in entry["paths"]))


def _kernel(op: str, entry: Mapping[str, Any]) -> AiCoreKernel:
    def dtypes(key: str) -> frozenset[str] | None:
        if key in entry:
            return frozenset(entry[key])
        return None if entry.get("dynamic_format") else frozenset()

    reduce = entry.get("precision_reduce")
    pairs = entry.get("pairs")
    return AiCoreKernel(op, dtypes("in"), dtypes("out"), None if reduce is None else bool(reduce),
                        bool(entry.get("cube")), bool(entry.get("heavy")), bool(entry.get("dynamic_format")),
                        pairs=None if pairs is None else frozenset((str(a), str(b)) for a, b in pairs),
                        from_select_format="in" in entry and "select_format" in entry)

"""Writes atc_wrap/precision/op_tables_data/<family>.json from public snapshots of CANN's operator repository and
ATC's parser.

Run by hand on fetched git directories (docs/op-tables.md has the exact command); the committed files are what the
toolkit reads. Facts only: names, dtype lists and flags read from the snapshot's tables and registrations, with the
repository, commit, date and paths they come from. The same snapshot gives the same bytes.

    python scripts/build_op_tables.py --ops-git OPS.git --ops-commit 81cc87458 \
        --parser-git PARSER.git --parser-commit 713bcb076 [--out atc_wrap/precision/op_tables_data]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from atc_wrap.precision.op_tables import COMMON, DATA_PACKAGE, FAMILIES, TABLE_FORMAT  # noqa: E402  (the repository root first)
from scripts.select_format_dtypes import select_pairs  # noqa: E402

SCRIPT = "scripts/build_op_tables.py"
TABLES = ("tf", "rewrites", "aicpu", "aicore")  # the documents' maps, written one entry a line
SCRIPT_VERSION = 2  # 2: input/output dtype pairs, and dynamic-format kernels' dtypes from op_select_format
OPS_REPOSITORY = "github.com/dengguojie/vue-element-admin"  # despite its name, a mirror of CANN's operator repository
PARSER_REPOSITORY = "github.com/Ascend/parser"
AICORE_INI = "ops/built-in/tbe/op_info_cfg/ai_core/{family}/aic-{family}-ops-info.ini"
AICPU_INI = "ops/built-in/aicpu/op_info_cfg/aicpu_kernel/aicpu_kernel.ini"
TBE_ROOT = "ops/built-in/tbe"  # where the `impl` package of the op implementations lives
TF_PLUGINS = "ops/built-in/framework/tf_plugin"
GRAPH_FUSION = "ops/built-in/fusion_pass/graph_fusion/ai_core"
CONST2ATTR = f"{GRAPH_FUSION}/const2attr/const2attr_fusion_pass.cc"
OP_MAP = "parser/common/op_map.cc"
PARSER_TYPES = "parser/common/parser_types.cc"
# The tables' spellings of float dtypes, as the toolkit names them; other dtypes are left out.
FLOAT_SPELLINGS: Mapping[str, str] = {
    "float16": "float16", "float": "float32", "float32": "float32", "double": "float64", "float64": "float64",
    "bfloat16": "bfloat16", "DT_FLOAT16": "float16", "DT_FLOAT": "float32", "DT_DOUBLE": "float64",
    "DT_BFLOAT16": "bfloat16",
}


@dataclass(frozen=True)
class Snapshot:
    """One commit of a fetched git directory (no work tree needed: everything is read with git show)."""

    git_dir: Path
    commit: str
    date: str

    @classmethod
    def open(cls, git_dir: Path, revision: str) -> Snapshot:
        full, date = _git(git_dir, "show", "-s", "--format=%H %cI", f"{revision}^{{commit}}").split()
        return cls(git_dir, full, date)

    def read(self, path: str) -> str:
        return _git(self.git_dir, "show", f"{self.commit}:{path}")

    def read_if_there(self, path: str) -> str | None:
        done = subprocess.run(["git", f"--git-dir={self.git_dir}", "show", f"{self.commit}:{path}"],
                              capture_output=True, check=False)
        return done.stdout.decode("utf-8", errors="replace") if done.returncode == 0 else None

    def files(self, folder: str) -> list[str]:
        listing = _git(self.git_dir, "ls-tree", "--name-only", f"{self.commit}", f"{folder}/")
        return sorted(line for line in listing.splitlines() if line)


def _git(git_dir: Path, *args: str) -> str:
    # A by-hand maintenance script reading file contents: plain subprocess, not the toolkit's tool runner (which
    # merges stdout and stderr for logs).
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {git_dir}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8", errors="replace")


def parse_ini(text: str) -> dict[str, dict[str, str]]:
    """``[Op]`` sections of ``key=value`` lines; a later section or key of the same name adds to the earlier."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and "]" in line:
            current = sections.setdefault(line[1:line.index("]")].strip(), {})
        elif current is not None and "=" in line:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return sections


def float_dtypes(listed: str) -> list[str]:
    return sorted({FLOAT_SPELLINGS[name] for name in (part.strip() for part in listed.split(","))
                   if name in FLOAT_SPELLINGS})


def float_pairs(inputs: str, outputs: str) -> list[list[str]] | None:
    """The (input 0, output 0) columns of a table entry whose two dtypes are floats, sorted; None where the lists
    are not of one length (their columns cannot be paired)."""
    first = [part.strip() for part in inputs.split(",")]
    last = [part.strip() for part in outputs.split(",")]
    if len(first) != len(last):
        return None
    pairs = {(FLOAT_SPELLINGS[a], FLOAT_SPELLINGS[b]) for a, b in zip(first, last, strict=True)
             if a in FLOAT_SPELLINGS and b in FLOAT_SPELLINGS}
    return [list(pair) for pair in sorted(pairs)]


def aicore_entry(section: Mapping[str, str]) -> dict[str, Any]:
    """The facts of one AI Core table entry: float dtypes of input 0 and output 0, the pairs its columns make,
    and its flags."""
    entry: dict[str, Any] = {}
    for key, name in (("in", "input0.dtype"), ("out", "output0.dtype")):
        if name in section:
            entry[key] = float_dtypes(section[name])
    if "input0.dtype" in section and "output0.dtype" in section:
        pairs = float_pairs(section["input0.dtype"], section["output0.dtype"])
        if pairs is not None:
            entry["pairs"] = pairs
    flag = section.get("precision_reduce.flag")
    if flag in ("true", "false"):
        entry["precision_reduce"] = flag == "true"
    for key, name in (("cube", "cubeOp.flag"), ("heavy", "heavyOp.flag"), ("dynamic_format", "dynamicFormat.flag")):
        if section.get(name) == "true":
            entry[key] = True
    return entry


def aicpu_kernels(text: str) -> dict[str, list[str]]:
    """Ascend op -> the float dtypes of input 0 of its AI CPU kernel (``input0.type=DT_FLOAT16,...``)."""
    return {op: float_dtypes(section.get("input0.type", "")) for op, section in parse_ini(text).items()}


def _without_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", source)


_REGISTRATION = re.compile(r'REGISTER_CUSTOM_OP\(\s*"(\w+)"\s*\)(.*?);', re.S)
_CALL = re.compile(r"\.\s*(\w+)\s*\(([^()]*)\)", re.S)


def tf_plugin_registrations(sources: Iterable[str]) -> dict[str, dict[str, str]]:
    """TF op type -> {Ascend op: implementation type}, from ``REGISTER_CUSTOM_OP("AscendOp")...OriginOpType(...)``
    chains whose FrameworkType is TENSORFLOW."""
    mapping: dict[str, dict[str, str]] = {}
    for source in sources:
        for match in _REGISTRATION.finditer(_without_comments(source)):
            calls = dict(_CALL.findall(match.group(2)))
            if calls.get("FrameworkType", "").strip() != "TENSORFLOW":
                continue
            imply = calls.get("ImplyType", "").strip().removeprefix("ImplyType::") or "unspecified"
            for tf_type in re.findall(r'"(\w+)"', calls.get("OriginOpType", "")):
                mapping.setdefault(tf_type, {})[match.group(1)] = imply
    return mapping


def const2attr_rewrites(source: str) -> dict[str, str]:
    """Ascend op -> its constant-attribute variant, from ``REGISTER_CONST2ATTR("OpD")...OriginOpType("Op")``."""
    rewrites: dict[str, str] = {}
    for match in re.finditer(r'REGISTER_CONST2ATTR\(\s*"(\w+)"\s*\)(.*?);', _without_comments(source), re.S):
        origin = re.search(r'\.\s*OriginOpType\(\s*"(\w+)"\s*\)', match.group(2))
        if origin:
            rewrites[origin.group(1)] = match.group(1)
    return rewrites


def dedicated_pass_rewrites(passes: Mapping[str, str], ops: Iterable[str], aicore: set[str]) -> dict[str, str]:
    """Op -> (OpD, pass file) where a graph-fusion pass named for the op (``top_k_fusion_pass.cc`` for TopK)
    names both ``"Op"`` and ``"OpD"`` and an AI Core table lists OpD: the passes that turn an op's constant inputs
    into the attributes of its D variant, one pass per op."""
    found: dict[str, str] = {}
    by_stem = {_pass_stem(path): path for path in passes}
    for op in ops:
        path = by_stem.get(op.lower())
        if path is None or f"{op}D" not in aicore:
            continue
        literals = set(re.findall(r'"(\w+)"', _without_comments(passes[path])))
        if op in literals and f"{op}D" in literals:
            found[op] = path
    return found


def parser_builtins(op_map: str, parser_types: str) -> dict[str, str]:
    """TF op type -> the graph op type ATC's TF parser makes of it itself (``tensorflow_op_map``)."""
    constants = dict(re.findall(r'const\s+char\s*\*\s*(\w+)\s*=\s*"([^"]*)"\s*;', parser_types))
    body = re.search(r"tensorflow_op_map\s*=\s*\{(.*?)\};", _without_comments(op_map), re.S)
    if body is None:
        raise SystemExit(f"{OP_MAP}: no tensorflow_op_map found")
    builtins: dict[str, str] = {}
    for tf_type, constant in re.findall(r'\{\s*"(\w+)"\s*,\s*(\w+)\s*\}', body.group(1)):
        if constant not in constants:
            raise SystemExit(f"{OP_MAP}: {tf_type} maps to {constant}, which {PARSER_TYPES} does not define")
        builtins[tf_type] = constants[constant]
    return builtins


def build(ops: Snapshot, parser: Snapshot) -> dict[str, dict[str, Any]]:
    """File stem -> its document: `common` (what holds for every chip) and one per family (its AI Core table)."""
    plugin_paths = [path for path in ops.files(TF_PLUGINS) if path.endswith(".cc")]
    tf_mapping = tf_plugin_registrations(ops.read(path) for path in plugin_paths)
    builtins = parser_builtins(parser.read(OP_MAP), parser.read(PARSER_TYPES))
    aicore = {family: parse_ini(ops.read(AICORE_INI.format(family=family))) for family in FAMILIES}
    listed = {op for sections in aicore.values() for op in sections}
    rewrites = {op: {"to": target, "pass": CONST2ATTR.removeprefix(f"{GRAPH_FUSION}/")}
                for op, target in const2attr_rewrites(ops.read(CONST2ATTR)).items()}
    ascend_ops = sorted({op for targets in tf_mapping.values() for op in targets} - set(rewrites))
    stems = {op.lower() for op in ascend_ops}
    passes = {path: ops.read(path) for path in ops.files(GRAPH_FUSION)
              if path.endswith("_fusion_pass.cc") and _pass_stem(path) in stems}
    rewrites.update({op: {"to": f"{op}D", "pass": path.removeprefix(f"{GRAPH_FUSION}/")}
                     for op, path in dedicated_pass_rewrites(passes, ascend_ops, listed).items()})
    tf: dict[str, dict[str, Any]] = {tf_type: {"ascend": targets} for tf_type, targets in tf_mapping.items()}
    for tf_type, graph_type in builtins.items():
        tf.setdefault(tf_type, {})["parser"] = graph_type

    def source(paths: list[str]) -> dict[str, Any]:
        return {"ops": {"repository": OPS_REPOSITORY, "commit": ops.commit, "date": ops.date, "paths": paths},
                "parser": {"repository": PARSER_REPOSITORY, "commit": parser.commit, "date": parser.date,
                           "paths": [OP_MAP, PARSER_TYPES]},
                "script": SCRIPT, "script_version": SCRIPT_VERSION}

    documents: dict[str, dict[str, Any]] = {COMMON: {
        "format": TABLE_FORMAT,
        "source": source([f"{TF_PLUGINS}/*.cc", AICPU_INI, CONST2ATTR, f"{GRAPH_FUSION}/*_fusion_pass.cc"]),
        "tf": tf,
        "rewrites": rewrites,
        "aicpu": aicpu_kernels(ops.read(AICPU_INI)),
    }}
    impl_sources: dict[str, str | None] = {}

    def impl_source(module: str) -> str | None:
        if module not in impl_sources:
            base = f"{TBE_ROOT}/{module.replace('.', '/')}"
            impl_sources[module] = ops.read_if_there(f"{base}.py") or ops.read_if_there(f"{base}/__init__.py")
        return impl_sources[module]

    for family in FAMILIES:
        entries = {op: aicore_entry(section) for op, section in aicore[family].items()}
        for op, entry in entries.items():
            if entry.get("dynamic_format") and "in" not in entry:
                entry.update(selected_dtypes(family, op, aicore[family][op], impl_source))
        documents[family] = {
            "format": TABLE_FORMAT,
            "family": family,
            "source": source([AICORE_INI.format(family=family), f"{TBE_ROOT}/impl/*.py (op_select_format)"]),
            "aicore": entries,
        }
    return documents


def impl_modules(op: str, section: Mapping[str, str]) -> list[str]:
    """The `impl` modules an op's implementation may be in: the table's opFile, else the op's name in snake case
    (Conv2D -> conv2d, SoftmaxV2 -> softmax_v2, L2Loss -> l2_loss: a digit before a capital splits or not)."""
    given = section.get("opFile.value", "").strip()
    if given:
        return [f"impl.{given}"]
    joined = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op).lower()
    split = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op).lower()
    return [f"impl.{name}" for name in dict.fromkeys((joined, split))]


def selected_dtypes(family: str, op: str, section: Mapping[str, str],
                    impl_source: Any) -> dict[str, Any]:
    """A dynamic-format kernel's dtypes from its op_select_format on `family` (scripts/select_format_dtypes.py):
    `in`, `out` and `pairs` where it decides them, with `select_format` naming the modules read; else only
    `select_format` with why they stay unknown."""
    found = None
    for module in impl_modules(op, section):
        found = select_pairs(family, module, impl_source)
        if found.pairs is not None or "no op_select_format" not in found.why_unknown:
            break
    assert found is not None
    paths = [f"{TBE_ROOT}/{module.replace('.', '/')}.py" for module in found.modules]
    if found.pairs is None:
        return {"select_format": {"paths": paths, "unknown": found.why_unknown}}
    return {"in": sorted({a for a, _ in found.pairs}), "out": sorted({b for _, b in found.pairs}),
            "pairs": [list(pair) for pair in found.pairs], "select_format": {"paths": paths}}


def _pass_stem(path: str) -> str:
    return Path(path).name.removesuffix("_fusion_pass.cc").replace("_", "").lower()


def dump(document: Mapping[str, Any]) -> str:
    """Compact JSON with sorted keys, one entry of each table per line so a regenerated file diffs by op."""
    def compact(value: Any) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    lines = ["{"]
    keys = sorted(document)
    for index, key in enumerate(keys):
        value = document[key]
        end = "," if index < len(keys) - 1 else ""
        if isinstance(value, dict) and key in TABLES:
            lines.append(f"{compact(key)}:{{")
            names = sorted(value)
            lines += [f"{compact(name)}:{compact(value[name])}{',' if i < len(names) - 1 else ''}"
                      for i, name in enumerate(names)]
            lines.append("}" + end)
        else:
            lines.append(f"{compact(key)}:{compact(value)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops-git", type=Path, required=True, help="git directory of the operator repository")
    parser.add_argument("--ops-commit", required=True, help="its commit to read (e.g. 81cc87458)")
    parser.add_argument("--parser-git", type=Path, required=True, help="git directory of Ascend/parser")
    parser.add_argument("--parser-commit", required=True, help="its commit to read (e.g. 713bcb076)")
    parser.add_argument("--out", type=Path, default=ROOT / "atc_wrap" / "precision" / DATA_PACKAGE,
                        help="folder written")
    args = parser.parse_args(argv)
    documents = build(Snapshot.open(args.ops_git, args.ops_commit), Snapshot.open(args.parser_git, args.parser_commit))
    args.out.mkdir(parents=True, exist_ok=True)
    for stem, document in documents.items():
        path = args.out / f"{stem}.json"
        path.write_text(dump(document), encoding="utf-8")
        counts = ", ".join(f"{len(document[key])} {key}" for key in TABLES if key in document)
        print(f"{path}: {path.stat().st_size} bytes, {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

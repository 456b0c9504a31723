"""One place for each piece of knowledge that had drifted between copies, read from the source with `ast`."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# benchmarks/hand/ holds what a user writes without infer (the baselines infer is measured against): left out.
SOURCES = sorted(path for folder in ("binio", "ckpt2pb", "atc_wrap", "infer", "benchmarks")
                 for path in (ROOT / folder).rglob("*.py") if "hand" not in path.relative_to(ROOT).parts)


def _trees(paths: list[Path]) -> dict[str, ast.AST]:
    return {path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8")) for path in paths}


TREES = _trees(SOURCES)
TEST_TREES = _trees(sorted((ROOT / "tests").rglob("*.py")))


def files_with_string(predicate: Callable[[str], bool]) -> set[str]:
    return {path for path, tree in TREES.items()
            if any(isinstance(node, ast.Constant) and isinstance(node.value, str) and predicate(node.value)
                   for node in ast.walk(tree))}


def files_calling(method: str, trees: dict[str, ast.AST] = TREES) -> set[str]:
    return {path for path, tree in trees.items()
            if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
                   for node in ast.walk(tree))}


def test_the_sources_were_read() -> None:
    assert len(TREES) > 100


@pytest.mark.slow
def test_tensorflows_log_level_is_set_in_one_place() -> None:
    assert files_with_string(lambda text: text == "TF_CPP_MIN_LOG_LEVEL") == {"ckpt2pb/logs.py"}


@pytest.mark.slow
def test_a_graph_def_is_parsed_by_one_reader() -> None:
    """ckpt2pb's: the converter side is handed the graph its caller read (atc_wrap may not import ckpt2pb)."""
    assert files_calling("ParseFromString") == {"ckpt2pb/protobuf.py"}
    assert files_calling("ParseFromString", TEST_TREES) == set()  # the tests read pbs with it too


@pytest.mark.slow
def test_msame_and_ais_bench_argv_is_built_in_one_place() -> None:
    assert files_with_string(lambda text: text == "--outfmt") == {"infer/run/_runners/tool.py"}


@pytest.mark.slow
def test_tensorflow_and_msaccucmp_dtype_spellings_live_in_binio() -> None:
    found = files_with_string(lambda text: text.startswith("DT_"))
    assert {path for path in found if not path.startswith("binio/")} == set()


@pytest.mark.slow
def test_the_version_is_written_once() -> None:
    """infer._version.__version__ (infer.__version__); pyproject reads it from there, doctor and the compare reports
    show it."""
    import infer

    assert files_with_string(lambda text: text == infer.__version__) == {"infer/_version.py"}
    asking_metadata = {path for path, tree in TREES.items() for node in ast.walk(tree)
                       if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                       and node.func.attr == "version" and any(isinstance(a, ast.Constant) and a.value == "infer"
                                                               for a in node.args)}
    assert asking_metadata == set()


@pytest.mark.slow
def test_a_users_json_or_toml_is_decoded_in_one_place() -> None:
    """binio/reading.py decodes JSON (nesting, numbers of thousands of digits refused by name) and the pipeline's
    TOML reader beside it: a new reader that called json.loads itself could regress to a RecursionError traceback.
    The others decode what no user hands infer: a table shipped in the package, the metadata infer wrote into a
    converted model (whose sha256 model.json checks before use), Keras' own version note (read for information,
    any failure ignored); the benchmarks read what they wrote."""
    decoding = {path for path, tree in TREES.items() for node in ast.walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("load", "loads") and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("json", "tomllib", "tomli")}
    assert {path for path in decoding if not path.startswith("benchmarks/")} == {
        "binio/reading.py", "infer/pipeline/config.py", "atc_wrap/precision/op_tables.py",
        "atc_wrap/standin/emulation.py",
        "atc_wrap/standin/converter_names.py", "atc_wrap/standin/merged_twins.py", "ckpt2pb/source.py",
        "ckpt2pb/host_ops.py"}


def _assigned_names(tree: ast.AST) -> set[str]:
    return {target.id for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)}


def test_the_largest_float16_is_written_once() -> None:
    """binio.dtypes.FP16_MAX: the compare side (values beyond fp16) and the AIPP side (var_reci_chn) read it."""
    assert {path for path, tree in TREES.items() if "FP16_MAX" in _assigned_names(tree)} == {"binio/dtypes.py"}


@pytest.mark.slow
def test_whether_a_file_is_an_om_is_answered_once() -> None:
    """atc_wrap.ascend_files.om_file.starts_as_om; the om's magic is compared nowhere else."""
    assert files_with_string(lambda text: text == "IMOD") == set()
    readers = {path for path, tree in TREES.items() if any(
        isinstance(node, ast.Name) and node.id == "OM_MAGIC" for node in ast.walk(tree))}
    assert readers == {"atc_wrap/ascend_files/om_file.py"}

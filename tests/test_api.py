"""The Python API: what `import infer` exports, that it stays lazy, and the README's example, run as written."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import infer
from binio.exports import LAZY_CALL, declared_exports
from infer.contract import ModelContract

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


PACKAGES = ("binio", "ckpt2pb", "atc_wrap", "infer")


def _init(package: str) -> str:
    return (ROOT / package.replace(".", "/") / "__init__.py").read_text()


def _packages() -> list[str]:
    return sorted(".".join(path.parent.relative_to(ROOT).parts) for top in PACKAGES
                  for path in (ROOT / top).rglob("__init__.py"))


def _lazy(package: str) -> bool:
    """Whether `package` exports its names lazily (`binio.exports.lazy_exports`)."""
    return f"{LAZY_CALL}(" in _init(package)


def _exports(package: str) -> dict[str, tuple[str, str]]:
    """Exported name -> (module, name there): what type checkers see, which is what the package serves."""
    return declared_exports(_init(package), lazy=_lazy(package))


EXPORTING = [package for package in _packages() if _exports(package)]


def test_the_packages_with_exports_were_found() -> None:
    assert {"binio", "infer", "infer.freeze", "infer.convert", "infer.dump_bin", "infer.run", "infer.compare",
            "infer.tune", "infer.pipeline", "infer.doctor", "infer.demo"} <= set(EXPORTING)
    assert {"binio", "infer", "infer.run", "infer.freeze"} <= {p for p in EXPORTING if _lazy(p)}
    assert {"infer.doctor", "infer.demo"} <= {p for p in EXPORTING if not _lazy(p)}


@pytest.mark.parametrize("package", _packages())
def test_every_package_writes_its_exports_once(package: str) -> None:
    """The one shape (binio/exports.py): ``from M import X as X`` lines, at module level or, in a package that
    stays light, under ``if TYPE_CHECKING:`` and served by lazy_exports; no ``__all__`` or map beside them."""
    tree = ast.parse(_init(package))
    assert not any(isinstance(node, ast.Assign) and "__all__" in map(ast.unparse, node.targets)
                   for node in tree.body), "__all__ would be a second list: lazy_exports answers it"
    blocks = [node.body for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) ==
              "TYPE_CHECKING"]
    if _lazy(package):
        assert len(blocks) == 1, "a lazy package writes its exports under one `if TYPE_CHECKING:`"
        assert blocks[0] and all(isinstance(node, ast.ImportFrom) and node.level == 0 and
                                 all(alias.asname for alias in node.names) for node in blocks[0]), \
            "under `if TYPE_CHECKING:`, only the exports: `from M import X as X`"
        assert f"__getattr__, __dir__ = {LAZY_CALL}(__name__)" in _init(package) or package == "infer"
    else:
        assert all(alias.asname for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 0
                   and (node.module or "").startswith(package)
                   for alias in node.names), "an export is re-exported by name: `from M import X as X`"


@pytest.mark.parametrize("package", EXPORTING)
def test_all_and_dir_list_every_export(package: str) -> None:
    module = importlib.import_module(package)
    if _lazy(package):
        assert sorted(module.__all__) == sorted(_exports(package))
    assert set(_exports(package)) <= set(dir(module))


@pytest.mark.parametrize(("package", "name"), [(p, n) for p in EXPORTING for n in _exports(p)])
def test_every_export_is_the_object_its_module_defines(package: str, name: str) -> None:
    module, attribute = _exports(package)[name]
    assert getattr(importlib.import_module(package), name) is getattr(importlib.import_module(module), attribute)


def test_the_lazy_exports_are_read_from_the_type_checking_imports() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a.b import C as C\n"
              "    from a.d import e as f\nfrom a.g import H as H\n")
    assert declared_exports(source, lazy=True) == {"C": ("a.b", "C"), "f": ("a.d", "e")}
    assert declared_exports(source, lazy=False) == {"H": ("a.g", "H")}


def test_the_stages_options_results_contract_and_error_are_exported() -> None:
    stages = {"inspect_model", "freeze_model", "convert_model", "dump_bins", "run_model", "compare_outputs",
              "run_pipeline"}
    types = {"ConvertOptions", "ConvertResult", "DumpOptions", "DumpResult", "RunOptions", "RunResult",
             "CompareOptions", "CompareResult", "FreezeReport", "ModelContract", "InferError"}
    assert stages | types | {"load_contract"} <= set(infer.__all__)
    importlib.import_module("infer.compare._compare")  # sets the attribute `compare` of infer to the package
    assert callable(infer.compare_outputs)  # which is why the stage's function has a name of its own


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_stage'"):
        infer.no_such_stage  # noqa: B018


def test_import_infer_starts_no_framework() -> None:
    probe = ("import sys, infer; infer.__all__; infer.__version__; "
             "print([m for m in ('tensorflow', 'onnxruntime', 'tf2onnx', 'onnx', 'matplotlib', 'PIL', 'typer') "
             "if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.strip() == "[]"


def test_py_typed_ships_with_every_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = config["tool"]["setuptools"]["package-data"]
    for package in ("binio", "ckpt2pb", "atc_wrap", "infer"):
        assert (ROOT / package / "py.typed").is_file()
        assert "py.typed" in package_data[package]


def test_the_version_is_the_one_the_package_declares() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "infer._version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", infer.__version__)


def test_a_stage_takes_the_contract_or_its_path(frozen_small_cnn: ModelContract, tmp_path: Path) -> None:
    by_path = infer.dump_bins(str(frozen_small_cnn.path), infer.DumpOptions(
        output=tmp_path / "by_path", sources=(("", "const:1"),), samples=4))
    by_object = infer.dump_bins(infer.load_contract(frozen_small_cnn.folder), infer.DumpOptions(
        output=tmp_path / "by_object", sources=(("", "const:1"),), samples=4))
    assert by_path.manifest.samples == by_object.manifest.samples == 4
    hashes = [[entry.digest for entry in result.manifest.inputs[0].files] for result in (by_path, by_object)]
    assert hashes[0] == hashes[1]


def readme_python_example() -> str:
    """The one ```python block of the README's "From Python" section."""
    section = README.read_text().split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, "the From Python section should hold exactly one python example"
    return blocks[0]


def test_the_readme_example_is_about_ten_lines() -> None:
    code = [line for line in readme_python_example().splitlines() if line.strip()]
    assert len(code) <= 12


@pytest.mark.slow
def test_the_readme_example_runs_the_whole_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The paths the example names are made here: the demo's checkpoint in ckpt/, its PNGs and labels.txt."""
    from infer.demo._dataset import write_dataset
    from infer.demo._model import build_demo_model

    model = build_demo_model(tmp_path / "ckpt")
    assert model.prefix == tmp_path / "ckpt" / "model.ckpt"
    assert (model.input, model.output) == ("images:0", "probs:0")
    write_dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")  # no atc on PATH: the stand-in, whatever this machine has
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_python_example(), str(README), "exec"), {"__name__": "readme_example"})
    assert printed.getvalue() == "PASSED\n"
    assert (tmp_path / "model" / "model.onnx").is_file()
    assert (tmp_path / "bins" / "dataset.json").is_file()
    runs = list((tmp_path / "out").iterdir())
    assert len(runs) == 1 and (runs[0] / "run.json").is_file()


def test_run_takes_the_dataset_as_its_manifest_or_its_folder(onnx_small_cnn: ModelContract, tmp_path: Path) -> None:
    dumped = infer.dump_bins(onnx_small_cnn.path, infer.DumpOptions(output=tmp_path / "bins",
                                                                    sources=(("", "random:3"),), samples=4))
    by_manifest = infer.run_model(onnx_small_cnn, dumped.manifest, tmp_path / "a")
    by_folder = infer.run_model(str(onnx_small_cnn.path), str(tmp_path / "bins"), tmp_path / "b")
    outputs = [sorted((p.name, p.read_bytes()) for p in result.folder.glob("*.bin"))
               for result in (by_manifest, by_folder)]
    assert outputs[0] == outputs[1] and len(outputs[0]) == 2


def test_a_pipeline_is_run_from_its_file_or_its_loaded_config(tmp_path: Path) -> None:
    with pytest.raises(infer.InferError, match=r"pipeline\.toml"):
        infer.run_pipeline(tmp_path / "pipeline.toml")


@pytest.mark.slow
def test_freeze_takes_a_mapping_of_values_as_the_command_line_takes_text(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli import run_cli
    from tests.models import build_resnet_like

    model = build_resnet_like(tmp_path / "ckpt")
    (name, (_, shape)), = model.inputs.items()
    fixed_shape = (2, *shape[1:])
    given = f"{name}[{','.join(map(str, fixed_shape))}]:float32"
    typed = infer.freeze_model(model.path, tmp_path / "typed", infer.FreezeOptions(
        outputs=tuple(model.outputs), inputs=(given,), assignments={"is_training": False}))  # type: ignore[dict-item]
    outcome = run_cli(capsys, "freeze", model.path, "-o", tmp_path / "text", "--outputs", ",".join(model.outputs),
                      "--inputs", given, "--set", "is_training=false")
    assert outcome.code == 0, outcome.err
    text = infer.FreezeReport(contract=infer.load_contract(tmp_path / "text"), verification=None, nodes=0,
                              stripped_attrs=0)
    from ckpt2pb.protobuf import read_graph_def

    # Two freezes of one model are equal graphs, not equal bytes (TensorFlow's serialisation varies).
    assert ({n.name: n.op for n in read_graph_def(typed.contract.pb_path).node}
            == {n.name: n.op for n in read_graph_def(text.contract.pb_path).node})
    assert (typed.contract.inputs, typed.contract.outputs, typed.contract.fixed) == (
        text.contract.inputs, text.contract.outputs, text.contract.fixed)
    assert typed.contract.inputs[0].shape == fixed_shape and "is_training" in typed.contract.fixed

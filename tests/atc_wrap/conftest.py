"""Graphs converted once per session for the stand-in's precision tests."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infer.contract import ModelContract
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_energy, build_matmul_sum

Convert = Callable[..., ModelContract]
"""What the `converted` fixture gives: (contract, **ConvertOptions fields) -> the converted copy's contract."""


@pytest.fixture(scope="session")
def energy_model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return write_frozen(tmp_path_factory.mktemp("energy"), build_energy, ("x:0",), ("energy:0",))


@pytest.fixture(scope="session")
def matmul_sum_model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return write_frozen(tmp_path_factory.mktemp("matmul_sum"), build_matmul_sum, ("x:0",), ("out:0",))


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Convert:
    """converted(contract, **ConvertOptions fields) -> the contract of a converted copy, made once per session."""
    import shutil

    from infer.contract import load_contract
    from infer.convert._convert import ConvertOptions, convert_model

    cache: dict[tuple[str, tuple[tuple[str, object], ...]], ModelContract] = {}

    def convert(contract: ModelContract, **options: Any) -> ModelContract:
        key = (str(contract.path), tuple(sorted(options.items())))
        if key not in cache:
            folder = tmp_path_factory.mktemp("converted") / contract.folder.name
            shutil.copytree(contract.folder, folder)
            copy = load_contract(folder / contract.path.name)
            cache[key] = convert_model(copy, ConvertOptions(**{"target": "onnx", **options})).contract
        return cache[key]

    return convert


@pytest.fixture(scope="session")
def two_in_two_out(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    from tests.builders.graphs import build_two_in_two_out

    return write_frozen(tmp_path_factory.mktemp("two_in_two_out"), build_two_in_two_out, ("a:0", "b:0"),
                        ("head:0", "parts:1"))


@pytest.fixture(scope="session")
def unknown_batch(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    from tests.builders.graphs import build_unknown_batch

    return write_frozen(tmp_path_factory.mktemp("unknown_batch"), build_unknown_batch, ("x:0",), ("y:0",))


@dataclass(frozen=True)
class FakeAtc:
    path: Path  # the `atc` on PATH
    record: Path  # where it writes the argv it received

    def argv(self) -> list[str]:
        return list(json.loads(self.record.read_text()))


FAKES = Path(__file__).resolve().parent.parent / "fakes"


def path_without_atc() -> str:
    """PATH minus any folder holding an `atc`, so a machine with CANN still tests the not-found path."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "atc").exists())


@pytest.fixture
def no_atc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", path_without_atc())
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)


@pytest.fixture
def fake_atc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_atc: None) -> FakeAtc:
    """tests/fakes/atc as `atc` on PATH (FAKE_ATC_MODE picks its behaviour; default success)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "atc").symlink_to(FAKES / "atc")
    record = tmp_path / "atc_argv.json"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_ATC_ARGV", str(record))
    monkeypatch.delenv("FAKE_ATC_MODE", raising=False)
    return FakeAtc(path=bindir / "atc", record=record)


@pytest.fixture(scope="session")
def bert_like(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, dict[str, object]]:
    """The freeze stage's BERT-like model (int32 inputs, layer norm by hand, softmax, two outputs), frozen."""
    from tests.builders.frozen import freeze_by_hand
    from tests.models import BuiltModel, build_bert_like

    reference = build_bert_like(tmp_path_factory.mktemp("bert_like_ckpt"))
    built = BuiltModel(prefix=reference.path, inputs=reference.inputs, outputs=reference.outputs)
    contract = freeze_by_hand(built, tmp_path_factory.mktemp("bert_like"), batch=reference.batch)
    return contract, dict(reference.feeds)

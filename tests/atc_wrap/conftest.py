"""Graphs converted once per session for the stand-in's precision tests."""

from __future__ import annotations

import pytest

from infer.contract import ModelContract
from tests.atc_wrap.graphs import build_energy, build_matmul_sum, write_frozen


@pytest.fixture(scope="session")
def energy_model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return write_frozen(tmp_path_factory.mktemp("energy"), build_energy, ("x:0",), ("energy:0",))


@pytest.fixture(scope="session")
def matmul_sum_model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return write_frozen(tmp_path_factory.mktemp("matmul_sum"), build_matmul_sum, ("x:0",), ("out:0",))


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """converted(contract, **ConvertOptions fields) -> the contract of a converted copy, made once per session."""
    import shutil

    from infer.contract import load_contract
    from infer.convert import ConvertOptions, convert_model

    cache: dict[tuple[str, tuple[tuple[str, object], ...]], ModelContract] = {}

    def convert(contract: ModelContract, **options: object) -> ModelContract:
        key = (str(contract.path), tuple(sorted(options.items())))
        if key not in cache:
            folder = tmp_path_factory.mktemp("converted") / contract.folder.name
            shutil.copytree(contract.folder, folder)
            copy = load_contract(folder / contract.path.name)
            cache[key] = convert_model(copy, ConvertOptions(**{"target": "onnx", **options})).contract  # type: ignore[arg-type]
        return cache[key]

    return convert

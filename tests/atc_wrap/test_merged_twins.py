"""One conversion, one result where tf2onnx merges duplicate nodes: BERT's per-layer mask adders ``(1 - mask) *
-10000`` are equal subgraphs, of which tf2onnx keeps one. The same pb gives the same bytes in fresh processes, the
survivor is the twin first by name, a --keep-dtype naming the twin merged away applies to the survivor, and a
control that reaches no ONNX node is said to change nothing on the stand-in."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infer.contract import ModelContract
from tests.atc_wrap.conftest import Convert
from tests.atc_wrap.twin_graphs import build_twin_mask_adders
from tests.builders.frozen import write_frozen
from tests.cli import run_cli

pytestmark = pytest.mark.slow

_TWINS = {"layer_0/mask/sub": ["layer_1/mask/sub"], "layer_0/mask/mul": ["layer_1/mask/mul"],
          "layer_0/mask/ExpandDims": ["layer_1/mask/ExpandDims"]}


@pytest.fixture(scope="module")
def twin_masks(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    return write_frozen(tmp_path_factory.mktemp("twin_masks"), build_twin_mask_adders, ("x:0", "mask:0"),
                        ("out:0",))


def _model(contract: ModelContract) -> Any:
    import onnx

    assert contract.converted_path is not None
    return onnx.load(str(contract.converted_path))


def test_fresh_processes_write_the_same_bytes(twin_masks: ModelContract) -> None:
    """Four conversions, each in a process of its own (the survivor followed object addresses: four sha256s)."""
    probe = "import sys; from infer.cli.app import main; main(sys.argv[1:])"
    digests = set()
    for run in range(4):
        target = twin_masks.folder / f"run{run}.onnx"
        subprocess.run([sys.executable, "-c", probe, "convert", str(twin_masks.path), "--target", "onnx", "-o",
                        str(target), "-q"], check=True, capture_output=True, timeout=600)
        digests.add(hashlib.sha256(target.read_bytes()).hexdigest())
    assert len(digests) == 1


def test_the_first_twin_by_name_survives_and_its_twins_are_recorded(twin_masks: ModelContract,
                                                                     converted: Convert) -> None:
    from atc_wrap.standin.merged_twins import read_merged

    model = _model(converted(twin_masks, precision_mode="force_fp16"))
    names = {node.name for node in model.graph.node}
    assert set(_TWINS) <= names and not {twin for twins in _TWINS.values() for twin in twins} & names
    assert {k: list(v) for k, v in read_merged(model).items()} == _TWINS


def test_keep_dtype_on_the_merged_away_twin_applies_to_the_survivor(twin_masks: ModelContract, tmp_path: Path,
                                                                     converted: Convert) -> None:
    def kept(name: str) -> Any:
        keep = tmp_path / f"{name.replace('/', '_')}.cfg"
        keep.write_text(f"{name}\n")
        return converted(twin_masks, precision_mode="force_fp16", keep_dtype=keep)

    survivor, twin = kept("layer_0/mask/mul"), kept("layer_1/mask/mul")
    plain = _model(converted(twin_masks, precision_mode="force_fp16"))
    assert survivor.converted_path is not None and twin.converted_path is not None
    assert twin.converted_path.read_bytes() == survivor.converted_path.read_bytes()  # the same model either way
    mul = next(node for node in _model(twin).graph.node if node.name == "layer_0/mask/mul")
    assert not mul.output[0].endswith("/fp32")  # kept: its output not rounded
    rounded = next(node for node in plain.graph.node if node.name == "layer_0/mask/mul")
    assert rounded.output[0].endswith("/fp32")  # without the control: rounded after it
    assert twin.converted is not None
    record = twin.converted.settings["emulation"]["per_op"]
    assert [(r["node"], r["onnx_nodes"]) for r in record] == [("layer_1/mask/mul", ["layer_0/mask/mul"])]


def test_a_control_on_an_op_with_no_onnx_node_says_so(twin_masks: ModelContract, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    copy = tmp_path / "model"
    shutil.copytree(twin_masks.folder, copy)
    keep = tmp_path / "keep.cfg"
    keep.write_text("scale\nlayer_1/mask/sub\n")  # scale: folded by tf2onnx; the twin: merged, applied
    outcome = run_cli(capsys, "convert", copy / "model.json", "--target", "onnx", "--keep-dtype", keep)
    assert outcome.code == 0, outcome.err
    warned = [line for line in outcome.err.splitlines() if "no ONNX node of the stand-in" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: --keep-dtype scale (Rsqrt)"), outcome.err


def test_tf2onnx_s_own_numbers_do_not_choose_the_survivor() -> None:
    """An LSTM's forward and backward `while/Less` copies are twins; the numbers tf2onnx drew for their `copy__`
    prefixes follow object addresses, and decided the survivor (the registry's CRNN gave other ONNX bytes after
    other conversions in the same process). The names without them decide, whichever numbers were drawn."""
    from atc_wrap.standin.merged_twins import survivor_key

    forward, backward = "blstm/forward_1/while/Less", "blstm/backward_1/while/Less"
    for first, second in ((5, 12), (12, 5), (9, 10)):
        names = [f"copy__{1_000_000 + first}/{forward}", f"copy__{1_000_000 + second}/{backward}"]
        assert min(names, key=survivor_key).endswith(backward)
    assert min(["a__1000012/x", "a__1000005/x"], key=survivor_key) == "a__1000005/x"  # a tie: the numbers decide

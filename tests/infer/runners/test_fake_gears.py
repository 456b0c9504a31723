"""The fake msame and ais_bench take the real ones' gear flags (docs/ascend-tools.md, Gears) and write their
outputs as the real ones do: msame the whole buffer of the largest gear for image-size and dims gears, ais_bench
the gear's real size."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.builders.bins import write_dataset
from tests.infer.run_data import gear_batches, gear_om, use_fake_tools

pytestmark = pytest.mark.slow


def _tool(name: str, om: Path, bins: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    launcher = ["msame"] if name == "msame" else [sys.executable, "-m", "ais_bench"]
    argv = [*launcher, "--model", str(om), "--input", f"{bins / 'a'},{bins / 'b'}", "--output", str(out),
            "--outfmt", "BIN", *flags]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def _outputs(out: Path, name: str) -> tuple[bytes, bytes]:
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    infix = "_output_" if name == "msame" else "_"
    return (folder / f"000000{infix}0.bin").read_bytes(), (folder / f"000000{infix}1.bin").read_bytes()


# kind, the gear's flags, the gear's input shape, the largest gear's input shape
CASES = [
    ("batch", ["--dymBatch", "2"], (2, 3), (4, 3)),
    ("image_size", ["--dymHW", "2,3"], (1, 2, 3), (1, 4, 4)),
    ("dims", ["--dymDims", "a:2,3;b:2,3"], (2, 3), (2, 5)),
]


@pytest.mark.parametrize(("kind", "flags", "shape", "largest"), CASES)
@pytest.mark.parametrize("tool", ["msame", "ais_bench"])
def test_each_tool_runs_the_gear_it_is_given_and_writes_as_the_real_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, kind: str, flags: list[str],
        shape: tuple[int, ...], largest: tuple[int, ...]) -> None:
    use_fake_tools(monkeypatch)
    om = gear_om(tmp_path / "model", kind)
    batches = gear_batches(shape)
    bins = write_dataset(tmp_path / "bins", batches).root
    ran = _tool(tool, om, bins, tmp_path / "out", *flags)
    assert ran.returncode == 0 and "[ERROR]" not in ran.stdout, ran.stdout + ran.stderr
    total, half = _outputs(tmp_path / "out", tool)
    expected = batches["a:0"][0] + batches["b:0"][0].astype(np.float32)
    real = expected.nbytes
    # msame divides a batch gear's buffer by largest // N (4 // 2: exact); it writes the whole buffer otherwise
    padded = tool == "msame" and kind != "batch"
    assert len(total) == (int(np.prod(largest)) * 4 if padded else real)
    assert len(half) == (int(np.prod(largest)) * 2 if padded else real // 2)
    np.testing.assert_array_equal(np.frombuffer(total[:real], np.float32).reshape(shape), expected)
    np.testing.assert_array_equal(np.frombuffer(half[:real // 2], np.float16), expected.astype(np.float16).ravel())
    assert set(total[real:]) <= {0xFF}  # the rest of the buffer: not the model's


def test_msame_pads_a_batch_gear_that_does_not_divide_the_largest(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    om = gear_om(tmp_path / "model", "batch")
    om.write_text('{"fake_om": {"input_shape": "a:-1,3;b:-1,3", "dynamic_batch_size": "1,3,8"}}')
    bins = write_dataset(tmp_path / "bins", gear_batches((3, 3))).root
    ran = _tool("msame", om, bins, tmp_path / "out", "--dymBatch", "3")
    assert "[ERROR]" not in ran.stdout, ran.stdout
    total, _ = _outputs(tmp_path / "out", "msame")
    assert len(total) == 8 * 3 * 4 // (8 // 3)  # half the largest gear's buffer: 4 batches' worth, not 3


@pytest.mark.parametrize("tool", ["msame", "ais_bench"])
def test_a_gear_the_om_lacks_is_refused_with_the_real_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               tool: str) -> None:
    use_fake_tools(monkeypatch)
    om = gear_om(tmp_path / "model", "batch")
    bins = write_dataset(tmp_path / "bins", gear_batches((3, 3))).root
    ran = _tool(tool, om, bins, tmp_path / "out", "--dymBatch", "3")
    assert "[ERROR] the dymBatch parameter is not correct" in ran.stdout
    assert ran.returncode == 1
    if tool == "msame":
        assert "model has dynamic batch size:{[1][2][4]}, please set correct dynamic batch size" in ran.stdout


def test_msame_takes_one_gear_flag_and_ais_bench_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_tools(monkeypatch)
    om = gear_om(tmp_path / "model", "batch")
    bins = write_dataset(tmp_path / "bins", gear_batches((2, 3))).root
    both = ["--dymBatch", "2", "--dymHW", "2,3"]
    ran = _tool("msame", om, bins, tmp_path / "msame-out", *both)
    assert ran.stdout.strip() == "[ERROR] dymBatch dymDims dymHW dymShape cannot be set at the same time"
    assert _tool("ais_bench", om, bins, tmp_path / "ais-out", *both).returncode == 0


@pytest.mark.parametrize("tool", ["msame", "ais_bench"])
def test_an_om_with_gears_run_without_a_gear_flag_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         tool: str) -> None:
    use_fake_tools(monkeypatch)
    om = gear_om(tmp_path / "model", "dims")
    bins = write_dataset(tmp_path / "bins", gear_batches((2, 3))).root
    ran = _tool(tool, om, bins, tmp_path / "out")
    assert "[ERROR] model has dynamic_dims, please add dymDims parameter" in ran.stdout


@pytest.mark.parametrize("tool", ["msame", "ais_bench"])
def test_a_shape_range_om_takes_dymshape_with_output_sizes_and_writes_the_real_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str) -> None:
    use_fake_tools(monkeypatch)
    om = gear_om(tmp_path / "model", "range")
    batches = gear_batches((3, 3))
    bins = write_dataset(tmp_path / "bins", batches).root
    shape = ["--dymShape", "a:3,3;b:3,3"]
    without = _tool(tool, om, bins, tmp_path / "no-size", *shape)
    assert re.search("size is (zero|0)", without.stdout) and without.returncode == 1
    outside = _tool(tool, om, bins, tmp_path / "outside", "--dymShape", "a:5,3;b:5,3", "--outputSize", "64,64")
    assert "[ERROR]" in outside.stdout
    ran = _tool(tool, om, bins, tmp_path / "out", *shape, "--outputSize", "1000,1000")
    assert ran.returncode == 0 and "[ERROR]" not in ran.stdout, ran.stdout
    total, half = _outputs(tmp_path / "out", tool)
    expected = batches["a:0"][0] + batches["b:0"][0].astype(np.float32)
    assert np.frombuffer(total, np.float32).tolist() == expected.ravel().tolist()
    assert len(half) == expected.size * 2

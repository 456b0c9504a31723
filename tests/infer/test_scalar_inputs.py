"""A scalar model input (a temperature, an is_training kept as an input): dump-bin writes its one value into every
batch file (msame takes one bin per input per run), and every runner and compare take such a dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from binio.manifest import load_manifest
from infer.contract import ModelContract
from infer.convert import ConvertOptions, convert_model
from infer.freeze import FreezeOptions, freeze_model
from infer.run import RunOptions, run_model
from infer.run.options import Backend
from tests.cli import run_cli
from tests.infer.run_data import as_om, use_fake_tools

SAMPLES, BATCH, TEMPERATURE = 5, 2, 2.5


@pytest.fixture(scope="module")
def scalar_model(tmp_path_factory: pytest.TempPathFactory) -> ModelContract:
    """probs = softmax(where(flag, 2 * x @ w, x @ w) / temperature), temperature and flag scalar inputs."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    folder = tmp_path_factory.mktemp("scalar_model")
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        temperature = tf1.placeholder(tf.float32, [], name="temperature")
        flag = tf1.placeholder(tf.bool, [], name="flag")
        weights = tf1.get_variable("w", [4, 3], initializer=tf1.random_normal_initializer(seed=3))
        logits = tf.matmul(x, weights)
        tf.nn.softmax(tf.where(flag, logits * 2.0, logits) / temperature, name="probs")
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(session, str(folder / "model.ckpt"))
    report = freeze_model(folder / "model.ckpt", folder / "frozen", FreezeOptions(
        outputs=("probs:0",), inputs=("x", "temperature", "flag"), batch=BATCH))
    return convert_model(report.contract, ConvertOptions()).contract


def _samples(folder: Path) -> Path:
    path = folder / "x.npy"
    np.save(path, np.random.default_rng(4).standard_normal((SAMPLES, 4)).astype(np.float32))
    return path


@pytest.fixture(scope="module")
def scalar_bins(scalar_model: ModelContract, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from infer.dump_bin import DumpOptions, dump_bins

    folder = tmp_path_factory.mktemp("scalar_bins")
    bins = folder / "bins"
    dump_bins(scalar_model, DumpOptions(output=bins, sources=(
        ("x", str(_samples(folder))), ("temperature", f"const:{TEMPERATURE}"), ("flag", "const:1"))))
    return bins


def _expected(contract: ModelContract, x: np.ndarray) -> np.ndarray:
    import tensorflow as tf

    graph_def = tf.compat.v1.GraphDef.FromString(contract.pb_path.read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    padded = np.concatenate([x, np.zeros((-len(x) % BATCH, 4), np.float32)])
    with tf.compat.v1.Session(graph=graph) as session:
        batches = [session.run("probs:0", {"x:0": padded[i:i + BATCH], "temperature:0": TEMPERATURE,
                                           "flag:0": True}) for i in range(0, len(padded), BATCH)]
    return np.concatenate(batches)[: len(x)]


@pytest.mark.slow
def test_a_scalar_is_written_once_a_batch_file(scalar_bins: Path) -> None:
    manifest = load_manifest(scalar_bins)
    temperature, flag = manifest.input("temperature:0"), manifest.input("flag:0")
    assert temperature.shape == () and flag.shape == () and manifest.input("x:0").shape == (BATCH, 4)
    assert len(temperature.files) == len(manifest.input("x:0").files) == 3
    for entry in temperature.files:
        assert np.fromfile(scalar_bins / temperature.folder / entry.name, np.float32).tolist() == [TEMPERATURE]
    for entry in flag.files:
        assert (scalar_bins / flag.folder / entry.name).read_bytes() == b"\x01"


def test_a_scalar_from_samples_is_refused(scalar_model: ModelContract, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    samples = str(_samples(tmp_path))
    outcome = run_cli(capsys, "dump-bin", "-m", scalar_model.path, "-o", tmp_path / "bins", "--source",
                      f"x={samples}", "--source", f"temperature={samples}", "--source", "flag=const:0")
    assert outcome.code == 2
    assert outcome.error_line == (f"error: {samples}: input temperature:0 is a scalar (one value a run, the same in "
                                  "every batch file), not samples")
    assert "--source temperature=const:VALUE" in outcome.err
    assert not (tmp_path / "bins").exists()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxrt", "tf", "msame", "ais_bench"])
def test_every_runner_takes_a_scalar_and_compare_passes(backend: Backend, scalar_model: ModelContract,
                                                        scalar_bins: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    model = scalar_model
    if backend in ("msame", "ais_bench"):
        use_fake_tools(monkeypatch)
        model = as_om(scalar_model, tmp_path / "om")
    result = run_model(model, scalar_bins, tmp_path / "out", RunOptions(backend=backend))
    assert result.record.completed
    outputs = np.concatenate([np.fromfile(result.folder / f"{i:06d}_output_0.bin", np.float32).reshape(BATCH, 3)
                              for i in range(3)])[:SAMPLES]
    x = np.load(scalar_bins.parent / "x.npy")
    np.testing.assert_allclose(outputs, _expected(scalar_model, x), atol=2e-3)
    same = ("--allow-same-backend",) if backend == "tf" else ()  # the golden run is TensorFlow's too
    outcome = run_cli(capsys, "compare", model.path, "-i", scalar_bins, "-a", result.folder, *same)
    assert outcome.code == 0, outcome.out + outcome.err
    assert outcome.verdict.startswith("PASSED")

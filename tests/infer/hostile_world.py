"""One small world every hostile-input test starts from, all of it written by infer itself: the small CNN converted
to the ONNX stand-in (5 classes), a dataset of 3 samples in 2 batches, a run of the stand-in (the actual side) and
TensorFlow's run of the pb (the golden side), a labels file, and the arguments of the commands that read them."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from infer.contract import ModelContract
from infer.run import RunOptions, run_model
from infer.run.layout import RUN_JSON
from tests.builders.bins import write_dataset
from tests.infer.run_data import cnn_batches


@dataclass(frozen=True)
class World:
    root: Path
    model: Path  # model.json
    bins: Path
    actual: Path  # a run folder of the stand-in
    golden: Path  # TensorFlow's run folder
    labels: Path

    @property
    def manifest(self) -> Path:
        return self.bins / "dataset.json"

    @property
    def run_json(self) -> Path:
        return self.actual / RUN_JSON

    def compare(self, *extra: str | Path) -> tuple[str | Path, ...]:
        """compare's arguments, both sides given (nothing runs but the comparison)."""
        return ("compare", self.model, "--input", self.bins, "--actual", self.actual, "--golden", self.golden,
                *extra)

    def copy(self, target: Path) -> World:
        """The whole world copied under `target`, to change a file of it."""
        shutil.copytree(self.root, target, symlinks=True)
        moved = {name: target / getattr(self, name).relative_to(self.root)
                 for name in ("model", "bins", "actual", "golden", "labels")}
        return World(root=target, **moved)


def build_world(root: Path, contract: ModelContract) -> World:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(contract.folder, root / "model")
    model = root / "model" / contract.path.name
    write_dataset(root / "bins", {"images:0": cnn_batches(2)}, samples=3, layout="NHWC")
    actual = run_model(model, root / "bins", root / "actual", RunOptions(backend="onnxrt")).folder
    golden = run_model(model, root / "bins", root / "golden", RunOptions(backend="tf")).folder
    (root / "labels.txt").write_text("0\n1\n2\n")
    return World(root=root, model=model, bins=root / "bins", actual=actual, golden=golden,
                 labels=root / "labels.txt")

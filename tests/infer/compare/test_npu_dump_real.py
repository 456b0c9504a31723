"""compare --npu-dump on the real AutoEncoder om of Ascend/ModelZoo-TensorFlow (commit a2c3332,
ACL_TensorFlow/contrib/cv/AutoEncoder_ID2495_for_ACL: hh_om.om, hh.pb, scripts/input_bins/hh.bin), copied into the
folder INFER_ASCEND_FIXTURES names (scripts/fetch_ascend_fixtures.py fetches them); skipped without it.

No real dump file is public, so the dump is the test NPU's (tests/npu_device.py): the real om's ops, descriptors
and layouts (NC1HWC0 convolutions, FRACTAL_NZ matmuls, the unfused RandomStandardNormal on AI CPU, ATC's TransData
and Cast ops), their values TensorFlow's on the real pb with the device's own random draw. What this checks on the
real files: the om's fusion map names the pb's nodes, every layout it records turns back, and the random op's draw
fed to TensorFlow makes what follows it comparable; msaccucmp agrees on a damaged convolution.
"""

from __future__ import annotations

import csv
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from binio.binfile import sha256_file
from binio.manifest import DatasetManifest
from ckpt2pb.protobuf import read_graph_def
from infer.compare import compare_npu_layers
from infer.compare.thresholds import Thresholds
from infer.contract import ConvertedInfo, ModelContract, SourceInfo
from tests.builders.bins import write_dataset
from tests.builders.frozen import write_pb_and_contract
from tests.infer.compare.msaccucmp_code import run_msaccucmp
from tests.npu_device import (
    DumpedOp,
    device_values,
    dumped_ops,
    read_device_model,
    tf_node_names,
    write_fusion_rule,
    write_nano_dumps,
    write_standard_dumps,
)
from tests.real_files import needs_real_files, real_file

pytestmark = [pytest.mark.slow, needs_real_files("hh_om.om", "hh.pb", "hh.bin")]
STEP = Path("20240101120000") / "0" / "hh_om" / "1" / "0"
CONV2 = "recognition/d_h2/Conv2D"


@pytest.fixture(scope="module")
def autoencoder(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModelContract, DatasetManifest, np.ndarray]:
    root = tmp_path_factory.mktemp("autoencoder")
    contract = write_pb_and_contract(root / "model", read_graph_def(real_file("hh.pb")), ["input:0"],
                                     ["generation/output:0"], SourceInfo(str(real_file("hh.pb")), "pb", "", ""))
    om = root / "model" / "hh_om.om"
    shutil.copyfile(real_file("hh_om.om"), om)
    converted = ConvertedInfo(target="om", path=om.name, sha256=sha256_file(om), inputs=contract.inputs,
                              outputs=contract.outputs, soc_version="Ascend310", precision_mode="force_fp16")
    contract = replace(contract, converted=converted).save()
    x = np.fromfile(real_file("hh.bin"), np.float32).reshape(100, 784)
    return contract, write_dataset(root / "bins", {"input:0": [x]}), x


def _dumped(contract: ModelContract, x: np.ndarray, damage: str = "") -> list[DumpedOp]:
    assert contract.converted is not None
    model = read_device_model(contract.folder / contract.converted.path, tf_node_names(contract.pb_path))
    return dumped_ops(model, device_values(contract.pb_path, model, {"input:0": x}, damage=damage))


def test_every_fused_op_of_the_real_om_is_compared_and_the_random_draw_is_fed(
        autoencoder: tuple[ModelContract, DatasetManifest, np.ndarray], tmp_path: Path) -> None:
    contract, bins, x = autoencoder
    write_standard_dumps(tmp_path / "dump" / STEP, _dumped(contract, x))
    layers = compare_npu_layers(contract, bins, Thresholds(), tmp_path / "dump", atol=1e-4, rtol=1e-3)
    compared = {row.tensor: row for row in layers.matched}
    # the outputs the om's fusion map names, read off hh_om.om (tests/atc_wrap/test_ascend_real_files.py)
    assert set(compared) == {
        "recognition/d_h1/add:0", "recognition/lrelu/add:0", "recognition/d_h2/add:0", "recognition/lrelu_1/add:0",
        "mul:0", "add:0", "generation/z_matrix/add:0", "generation/Relu:0", "generation/Relu_1:0",
        "generation/g_h2/conv2d_transpose:0", "generation/output:0"}
    assert all(row.passed for row in compared.values())
    assert compared["recognition/d_h2/add:0"].layout == ("NC1HWC0 [100, 2, 7, 7, 16] turned into NHWC [100, 7, 7, "
                                                         "32] (the om's origin)")
    # fed from the dump, the device's draw makes mul:0 = stddev * noise, and all after it, comparable
    assert layers.fed_from_dump == ("random_normal/RandomStandardNormal:0",) and not layers.skipped_random
    assert compared["generation/output:0"].npu_op == "generation/output"


def test_a_damaged_real_convolution_is_named_first_by_infer_and_by_msaccucmp(
        autoencoder: tuple[ModelContract, DatasetManifest, np.ndarray], tmp_path: Path) -> None:
    contract, bins, x = autoencoder
    dumped = _dumped(contract, x, damage="recognition/d_h2/add:0")
    write_standard_dumps(tmp_path / "dump" / STEP, dumped)
    layers = compare_npu_layers(contract, bins, Thresholds(), tmp_path / "dump", atol=1e-4, rtol=1e-3,
                                dump_golden=tmp_path / "golden")
    first = layers.diverges_at
    assert first is not None and first.npu_op_text == (f"NPU op {CONV2} (Conv2D) fusing recognition/d_h2/add, "
                                                       f"{CONV2}")
    assert contract.converted is not None
    write_nano_dumps(tmp_path / "nano", dumped)
    write_fusion_rule(read_device_model(contract.folder / contract.converted.path, tf_node_names(contract.pb_path)),
                      tmp_path / "fusion.json")
    (tmp_path / "out").mkdir()
    run_msaccucmp("compare", "-m", str(tmp_path / "nano"), "-g", str(tmp_path / "golden"), "-f",
                  str(tmp_path / "fusion.json"), "-out", str(tmp_path / "out"), ok=(0, 2))
    [result] = list((tmp_path / "out").glob("result_*.csv"))
    with open(result, newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["CosineSimilarity"] not in ("NaN", "")]
    failing = next(row for row in rows if float(row["CosineSimilarity"]) < 0.99
                   or float(row["RelativeEuclideanDistance"]) > 0.05)
    assert failing["NPUDump"] == CONV2

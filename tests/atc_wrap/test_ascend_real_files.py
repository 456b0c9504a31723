"""The readers on real files from Ascend/ModelZoo-TensorFlow (commit a2c3332a6cea24b56ab936a746b994c89c8fc7f8,
ACL_TensorFlow/contrib/cv/): `AutoEncoder_ID2495_for_ACL/hh_om.om` (ATC 1.80, header 0x20000000), its frozen
`hh.pb`, input `scripts/input_bins/hh.bin` and NPU output `scripts/results/VAE/hh_output0.bin`, and
`DD-NET_ID1088_for_TensorFlow/out.om` (ATC 1.75, the older header 0x10000000) with `test/X0.bin`, `test/X1.bin`,
fetched by scripts/fetch_ascend_fixtures.py (as hh_om.om, hh.pb, hh.bin, hh_output0.bin, ddnet_out.om,
ddnet_X0.bin, ddnet_X1.bin) into the folder INFER_ASCEND_FIXTURES names (tests/real_files.py). They are not
committed; without that folder these tests skip.

What is asserted was read off the files (and the pb checked with TensorFlow's own parser), not taken from the
reader: see the notes on each test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from atc_wrap.ascend_files.npu_dump import read_npu_dump
from atc_wrap.ascend_files.om_model import OmModel, OmTensor, read_om
from tests.atc_wrap.ascend_writer import DumpTensorSpec, dump_bytes
from tests.atc_wrap.npu_layout_reference import hwcn_to_fractal_z, nchw_to_nc1hwc0, nd_to_fractal_nz
from tests.real_files import real_file


@pytest.fixture(scope="module")
def autoencoder() -> OmModel:
    return read_om(real_file("hh_om.om"))


@pytest.fixture(scope="module")
def ddnet() -> OmModel:
    return read_om(real_file("ddnet_out.om"))


def test_the_autoencoder_header_and_partitions(autoencoder: OmModel) -> None:
    header = autoencoder.header
    assert (header.version, header.name, header.platform_version, header.om_ir_version, header.model_num) == \
        (0x20000000, "hh_om", "1.11.z.0", 2, 1)
    assert header.length == 618993 - 256
    assert [(p.name, p.size) for p in autoencoder.partitions] == [
        ("MODEL_DEF", 154630), ("WEIGHTS_DATA", 386560), ("TBE_KERNELS", 64667), ("TASK_INFO", 12828)]


def test_the_autoencoder_was_made_by_atc_for_ascend310(autoencoder: OmModel) -> None:
    assert (autoencoder.soc_version, autoencoder.atc_version, autoencoder.framework_type,
            autoencoder.target_type) == ("Ascend310", "1.80.T15.0.B156", "TensorFlow", "MINI")
    assert autoencoder.out_node_names == ("generation/output:0",)
    # the command line of the README (--input_shape="input:100,784"), as ATC recorded it
    assert "--soc_version=Ascend310 --input_shape=input:100,784" in autoencoder.atc_cmdline


def test_the_autoencoder_inputs_and_outputs_fit_the_real_bins(autoencoder: OmModel) -> None:
    (given,) = autoencoder.inputs
    (result,) = autoencoder.outputs
    assert (given.name, given.tensor.dtype, given.tensor.shape, given.tensor.format) == \
        ("input", "float32", (100, 784), "NHWC")
    assert (result.name, result.tensor.dtype, result.tensor.shape, result.tensor.format) == \
        ("generation/output:0", "float32", (100, 28, 28, 1), "NHWC")
    # the real input is 100 x 784 float32 and the real NPU output one float32 per output element
    assert (real_file("hh.bin")).stat().st_size == 100 * 784 * 4 == given.tensor.size
    output = np.fromfile(real_file("hh_output0.bin"), dtype=np.float32)
    assert output.size == 100 * 28 * 28
    assert output.min() >= 0.0 and output.max() <= 1.0  # the output op is a Sigmoid


def test_the_autoencoder_op_counts(autoencoder: OmModel) -> None:
    counts = dict(autoencoder.op_counts)
    assert len(autoencoder.ops) == 46
    assert (counts["Const"], counts["TransData"], counts["Conv2D"], counts["MatMulV2"], counts["Conv2DBackpropInputD"],
            counts["Data"], counts["NetOutput"]) == (17, 7, 2, 3, 2, 1, 1)


def test_the_autoencoder_fusion_map(autoencoder: OmModel) -> None:
    fused = {entry.op_name: entry for entry in autoencoder.fusion_map}
    conv = fused["recognition/d_h1/Conv2D"]
    assert conv.original_op_names == ("recognition/d_h1/add", "recognition/d_h1/Conv2D")
    (out,) = conv.outputs
    assert (out.origin_name, out.origin_output_index, out.format, out.shape, out.origin_format, out.origin_shape) == \
        ("recognition/d_h1/add", 0, "NC1HWC0", (100, 1, 14, 14, 16), "NHWC", (100, 14, 14, 16))
    lrelu = fused["recognition/lrelu/Absrecognition/lrelu/mulrecognition/lrelu/mul_1recognition/lrelu/add"]
    assert lrelu.original_op_names == ("recognition/lrelu/Abs", "recognition/lrelu/mul", "recognition/lrelu/mul_1",
                                       "recognition/lrelu/add")
    (matmul_out,) = fused["generation/z_matrix/MatMul"].outputs
    assert (matmul_out.origin_name, matmul_out.format, matmul_out.shape, matmul_out.origin_shape) == \
        ("generation/z_matrix/add", "FRACTAL_NZ", (98, 7, 16, 16), (100, 1568))


def test_every_tf_name_in_the_fusion_map_is_a_node_of_the_frozen_pb(autoencoder: OmModel) -> None:
    from ckpt2pb.protobuf import read_graph_def

    nodes = {node.name for node in read_graph_def(real_file("hh.pb")).node}
    named = {name for entry in autoencoder.fusion_map for name in entry.original_op_names}
    named |= {out.origin_name for entry in autoencoder.fusion_map for out in entry.outputs if out.origin_name}
    assert len(named) > 20
    assert named - nodes == set()


def test_the_older_header_om_inspects(ddnet: OmModel) -> None:
    header = ddnet.header
    assert (header.version, header.model_num, header.name, header.platform_version, header.om_ir_version) == \
        (0x10000000, None, "out", "1.11.z.0", 2)
    assert [p.name for p in ddnet.partitions] == ["MODEL_DEF", "WEIGHTS_DATA", "TBE_KERNELS", "TASK_INFO"]
    # this ATC (1.75) wrote no soc_version or framework_type; the README's command line gave Ascend310
    assert (ddnet.soc_version, ddnet.atc_version, ddnet.target_type) == ("", "1.75.22.0.220", "MINI")
    assert ddnet.out_node_names == ("model_1/dense_2/Softmax:0",)
    assert [(i.name, i.tensor.shape) for i in ddnet.inputs] == [("Input", (1, 32, 105)), ("Input_1", (1, 32, 15, 2))]
    assert [(o.name, o.tensor.dtype, o.tensor.shape) for o in ddnet.outputs] == \
        [("model_1/dense_2/Softmax:0", "float32", (1, 21))]
    counts = dict(ddnet.op_counts)
    assert (counts["Const"], counts["TransData"], counts["Conv2D"], counts["MatMulV2"], counts["SoftmaxV2"]) == \
        (55, 48, 15, 3, 1)


def test_the_older_oms_test_inputs_have_its_input_shapes(ddnet: OmModel) -> None:
    """DD-NET's test/X0.bin and X1.bin are numpy files (float64, one sample without its batch axis) despite their
    names: the om's inputs are those shapes with a batch of 1."""
    samples = [np.load(real_file(name)) for name in ("ddnet_X0.bin", "ddnet_X1.bin")]
    assert [s.dtype for s in samples] == [np.float64, np.float64]
    assert [(1, *s.shape) for s in samples] == [i.tensor.shape for i in ddnet.inputs]


def _device_layout(origin: np.ndarray, tensor: OmTensor) -> np.ndarray:
    """What the NPU holds for `origin` in the om's device layout, written by the element-by-element reference."""
    if tensor.format == "NC1HWC0":
        assert tensor.origin_format == "NHWC"
        return nchw_to_nc1hwc0(origin.transpose(0, 3, 1, 2), tensor.shape[-1])
    if tensor.format == "FRACTAL_NZ":
        return nd_to_fractal_nz(origin)
    assert tensor.format == "FRACTAL_Z" and tensor.origin_format == "HWCN"
    return hwcn_to_fractal_z(origin)


@pytest.mark.parametrize(("model_name", "op_name"), [
    ("ddnet", "model_1/model/lambda/resize/ResizeBilinear"),  # NC1HWC0 of NHWC (1, 32, 15, 2)
    ("ddnet", "model_1/dense_2/MatMul"),  # FRACTAL_NZ of a 2-D "NHWC" (1, 21)
    ("ddnet", "dynamic_const_24589_245"),  # FRACTAL_Z of HWCN (1, 3, 128, 64)
    ("autoencoder", "recognition/d_h2/Conv2D"),  # NC1HWC0 of NHWC (100, 7, 7, 32)
    ("autoencoder", "recognition/w_mean/MatMuladd"),  # FRACTAL_NZ of ND (100, 20)
])
def test_dumps_of_the_real_oms_ops_turn_back_with_the_oms_origins(request: pytest.FixtureRequest, tmp_path: Path,
                                                                  model_name: str, op_name: str) -> None:
    model: OmModel = request.getfixturevalue(model_name)
    op = next(op for op in model.ops if op.name == op_name)
    (out,) = op.output_descs
    assert out.origin_shape is not None
    origin = np.random.default_rng(3).standard_normal(out.origin_shape).astype(np.float16)
    device = _device_layout(origin, out)
    assert device.shape == out.shape, "the reference layout gives the shape ATC stored"
    file_name = f"{op.type}.{op.name.replace('/', '_')}.7.1.1700000000000000"
    path = tmp_path / file_name
    path.write_bytes(dump_bytes(op.name, [], [DumpTensorSpec(device, out.format, original_name=out.origin_name,
                                                             original_index=out.origin_output_index or 0)]))
    dump = read_npu_dump(path)
    (dumped,) = dump.outputs
    assert (dump.op_name, dumped.original_name, dumped.format) == (op.name, out.origin_name, out.format)
    assert np.array_equal(dumped.origin_array(out.origin_format, out.origin_shape), origin)

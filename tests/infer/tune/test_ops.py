"""The ops tune-precision may keep in fp32, with the FLOPs and parameters it reports for them."""

from __future__ import annotations

from pathlib import Path

from infer.tune._ops import tunable_ops
from tests.builders.frozen import write_frozen
from tests.builders.graphs import build_cnn_energy


def test_flops_count_a_reduction_by_what_it_reads_and_a_conv_by_its_kernel(tmp_path: Path) -> None:
    contract = write_frozen(tmp_path / "model", build_cnn_energy, ("x:0",), ("out:0",))
    from ckpt2pb.protobuf import read_graph_def

    everything = {node.name for node in read_graph_def(contract.pb_path).node}
    ops = {op.name: op for op in tunable_ops(contract, everything)}
    conv_outputs = 2 * 8 * 8 * 4
    assert ops["conv"].flops == 2 * conv_outputs * 3 * 3 * 3 and ops["conv"].params == 3 * 3 * 3 * 4
    assert ops["square"].flops == conv_outputs
    assert ops["total"].flops == conv_outputs  # reads every square, writes 2 sums
    assert ops["pool"].flops == conv_outputs
    assert ops["sqrt"].flops == 2 and ops["head/logits"].flops == 2 * 2 * 5 * 4
    assert ops["head/logits"].params == 4 * 5
    assert "x" not in ops and "conv/kernel" not in ops  # the input and constants are not ops to keep

"""A fake ATC: takes the real one's arguments and prints what it prints, by FAKE_ATC_MODE.

success (default): writes <--output>.om and prints `ATC run success, ...` after a W11001 warning line.
e10016: `ATC run failed` and an E10016 for the first --out_nodes name, exit 255 (as ATC's -1).
no_success: exits 0 without the success line, leaving a truncated .om (a crash ATC reports as 0).
hang: prints that it started, then sleeps (the wrapper's timeout must end it).
FAKE_ATC_COMPILE=onnx: the om it writes carries the pb converted by tf2onnx (--input_shape's inputs, --out_nodes'
outputs, in their order), which the fake msame and ais_bench run (fake_om.py): an om they run wherever it is copied.
The argv it received is written as JSON to FAKE_ATC_ARGV when that is set. A missing --insert_op_conf file fails.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def option(argv: list[str], name: str) -> str:
    for arg in argv:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return ""


def main() -> int:
    argv = sys.argv[1:]
    record = os.environ.get("FAKE_ATC_ARGV")
    if record:
        Path(record).write_text(json.dumps(sys.argv))
    mode = os.environ.get("FAKE_ATC_MODE", "success")
    print("ATC start working now, please wait for a moment.", flush=True)
    if mode == "hang":
        time.sleep(600)
        return 0
    if mode == "e10016":
        node = option(argv, "out_nodes").split(";")[0].split(":")[0]
        print("ATC run failed, Please check the detail log, Try 'atc --help' for more information")
        print(f"E10016: Opname [{node}] specified in [--out_nodes] is not found in the model, confirm whether this "
              "node name exists, or node is not split with the specified delimiter ';'")
        print("        Solution: Check whether the input parameter --out_nodes is correct.")
        print("        TraceBack (most recent call last):")
        print("        ParseOutNodes failed [FUNC:ParseOutNodes][FILE:atc_ir_common.cc][LINE:512]")
        return 255
    conf = option(argv, "insert_op_conf")
    if conf and not Path(conf).is_file():  # as ATC: the AIPP config must exist when it starts
        print("ATC run failed, Please check the detail log, Try 'atc --help' for more information")
        print(f"E10001: Value [{conf}] for parameter [--insert_op_conf] is invalid. Reason: file does not exist")
        return 255
    if mode == "no_success":
        Path(option(argv, "output") + ".om").write_bytes(b"trunc")
        print("....")
        return 0
    print("W11001: Op [conv/Conv2D] does not hit the high-priority operator information library, which might "
          "result in compromised performance.")
    om = Path(option(argv, "output") + ".om")
    if os.environ.get("FAKE_ATC_COMPILE") == "onnx":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from fake_om import EMBEDDED  # here, not at the top: numpy's import would delay its first line

        om.write_bytes(EMBEDDED + compiled(argv))
    else:
        om.write_bytes(b"fake om for " + option(argv, "soc_version").encode())
    print("ATC run success, welcome to the next use.")
    return 0


def compiled(argv: list[str]) -> bytes:
    """The pb as an ONNX model, by tf2onnx: what this fake's om computes."""
    import tf2onnx

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: its one pb reader
    from ckpt2pb.protobuf import read_graph_def

    graph_def = read_graph_def(Path(option(argv, "model")))
    inputs = [f"{part.rpartition(':')[0]}:0" for part in option(argv, "input_shape").split(";")]
    outputs = option(argv, "out_nodes").split(";")
    model, _ = tf2onnx.convert.from_graph_def(graph_def, input_names=inputs, output_names=outputs, opset=13)
    return bytes(model.SerializeToString())


if __name__ == "__main__":
    sys.exit(main())

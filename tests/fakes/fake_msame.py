"""A fake msame: the real one's arguments, printed lines, output layout and habits, on the ONNX model beside the om.

Like the real one it writes OUT/<timestamp>/<stem>_output_<i>.bin, names the folder by the newer unpadded
timestamp (FAKE_MSAME_TIMESTAMP=padded for the older form), and exits 0 even when it prints [ERROR]
(FAKE_MSAME_FAIL=1 makes it fail that way). It dumps as the real one does (fake_dump.py): ``--dump true`` writes
./acl.json (dump_path <--output>/dump, dump_mode output, the om's stem as model_name) and deletes it at the end;
an ./acl.json already in the folder it runs in is read whatever --dump says (Ascend/tools msame, main.cpp,
utils.cpp DumpJson, sample_process.cpp InitResource).

Gears (fake_gears.py): --dymBatch, --dymHW, --dymDims and --dymShape are checked against the om's gears with the
real one's messages, at most one of them per start; --outputSize sets the output buffers. Each output file is
written as OutputModelResult writes it: under --dymShape the output's real size; otherwise the whole output buffer
(the largest gear's size, or --outputSize), divided under --dymBatch by largest batch // N, the gear's output
first and the rest of the buffer 0xff bytes (device memory the gear did not write).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_dump import device_dump
from fake_gears import FakeGears, GearRefused, chosen_shapes, om_gears
from fake_om import input_names, output_buffer_sizes, run_om

UNWRITTEN = b"\xff"  # what the fake's device memory holds where the model wrote nothing


def stamp(now: datetime) -> str:
    if os.environ.get("FAKE_MSAME_TIMESTAMP") == "padded":
        return now.strftime("%Y%m%d_%H%M%S")
    return f"{now.year}{now.month}{now.day}_{now.hour}_{now.minute}_{now.second}_{now.microsecond}"


def forced_failure(om: Path, inputs: str) -> bool:
    """A marker file beside the om, ``model.om.fail-once.WORD`` or ``model.om.fail-always.WORD``, fails the runs
    whose --input contains WORD (a shard's folder name); a fail-once marker is used up by the run it fails."""
    for marker in sorted(om.parent.glob(om.name + ".fail-*")):
        mode, _, word = marker.name[len(om.name) + len(".fail-"):].partition(".")
        if not word or word not in inputs:
            continue
        if mode == "once":
            try:
                marker.unlink()
            except FileNotFoundError:  # another run took it
                continue
        return True
    return False


def write_acl_json(model: str, output: str) -> None:
    """What msame's Utils::DumpJson writes for --dump true, into the folder it runs in."""
    dump_path = f"{output}/dump"
    Path("acl.json").write_text(json.dumps({"dump": {"dump_path": dump_path, "dump_mode": "output",
                                                     "dump_list": [{"model_name": Path(model).stem}]}}))
    Path(dump_path).mkdir(parents=True, exist_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="msame")
    parser.add_argument("--model", required=True)
    parser.add_argument("--input", default="")
    parser.add_argument("--output", default="./")
    parser.add_argument("--outfmt", default="BIN")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--loop", type=int, default=1)
    parser.add_argument("--dymBatch", type=int, default=0)
    parser.add_argument("--dymHW", default=None)
    parser.add_argument("--dymDims", default=None)
    parser.add_argument("--dymShape", default=None)
    parser.add_argument("--outputSize", default=None)
    parser.add_argument("--dump", default="false")
    args = parser.parse_args()
    if sum(flag is not None for flag in (args.dymHW, args.dymDims, args.dymShape)) + bool(args.dymBatch) > 1:
        print("[ERROR] dymBatch dymDims dymHW dymShape cannot be set at the same time")
        return 1
    dumping = args.dump == "true"
    if dumping:
        write_acl_json(args.model, args.output)
    try:
        return run(args)
    finally:
        if dumping:
            Path("acl.json").unlink()
            print("[INFO] delete acl.json success")


def run(args: argparse.Namespace) -> int:
    acl_json = Path("acl.json")
    print("[INFO] acl init success")
    print(f"[INFO] open device {args.device} success")
    print("[INFO] create context success")
    print("[INFO] create stream success")
    om = Path(args.model)
    if not om.is_file() or os.environ.get("FAKE_MSAME_FAIL") == "load":
        print(f"[ERROR] load model from file failed, model file is {args.model}")
        print("[ERROR] execute LoadModelFromFileWithMem failed, errorCode is 145000")
        return 0  # the real msame exits 0 here too
    print(f"[INFO] load model {args.model} success")
    print("[INFO] create model description success")
    gears = om_gears(om)
    try:
        shapes, gear = chosen_shapes(gears, batch=args.dymBatch, hw=args.dymHW, dims=args.dymDims,
                                     shape=args.dymShape)
        buffers = _output_buffers(args, om, gears)
    except GearRefused as refused:
        print("\n".join(refused.lines))
        print("[ERROR] Sample process failed")
        return 1
    if gear is not None or args.dymShape is not None:  # what it says of the gear it checked
        print({"batch": "[INFO] check dynamic batch success", "image_size": "[INFO] check dynamic image size success.",
               "dims": "[INFO] check dynamic dims success"}.get(gears.kind if gears else "",
                                                               "[INFO] check Dynamic Shape success"))
    out = Path(args.output) / stamp(datetime.now())
    out.mkdir(parents=True, exist_ok=True)
    print(out)
    dirs = [Path(d) for d in args.input.split(",")]
    if os.environ.get("FAKE_MSAME_FAIL") == "1" or forced_failure(om, args.input):
        print("[INFO] start to process file:" + str(dirs[0]))
        print("[ERROR] input file size is not equal to model input size")
        print("[ERROR] CreateInput failed")
        return 0
    try:
        dump = device_dump(acl_json if acl_json.is_file() else None, om, args.device)
    except ValueError as exc:
        print(f"[ERROR] acl init failed: {exc}")
        return 0
    times = []
    for _ in range(args.loop):
        try:
            ran = run_om(om, dirs, shapes)
        except ValueError as exc:
            print(f"[ERROR] {exc}")
            print("[ERROR] model execute failed")
            return 0
        for name, (stem, outputs) in zip(input_names(dirs), ran, strict=True):
            if dump is not None:
                dump.execution(dirs, name)
            start = time.perf_counter()
            print(f"[INFO] start to process file:{dirs[0] / (stem + '.bin')}")
            print("[INFO] model execute success")
            elapsed = (time.perf_counter() - start) * 1000 + 0.5
            times.append(elapsed)
            print(f"Inference time: {elapsed:.3f}ms")
            for index, array in enumerate(outputs):
                written = _written(array.tobytes(), buffers[index], args, gears, gear)
                if written is None:
                    print("[ERROR] model execute failed")  # the output did not fit its buffer
                    return 0
                (out / f"{stem}_output_{index}.bin").write_bytes(written)
            print("[INFO] output data success")
    print(f"Inference average time: {sum(times) / len(times):.6f} ms")
    print("[INFO] destroy model input success")
    print("[INFO] unload model success, model Id is 1")
    print("[INFO] end to destroy context")
    print(f"[INFO] end to reset device is {args.device}")
    print("[INFO] end to finalize acl")
    print("[INFO] Execute sample success")
    return 0


def _output_buffers(args: argparse.Namespace, om: Path, gears: FakeGears | None) -> list[int | None]:
    """CreateOutput: --outputSize's sizes (one per output), else what the om says (0 for a shape-range om)."""
    sizes = output_buffer_sizes(om, gears)
    if args.outputSize is not None:
        given = [int(v) for v in args.outputSize.split(",")]
        if len(given) != len(sizes):
            raise GearRefused(f"[ERROR] om has {len(sizes)} output, but outputSize parametet give {len(given)}",
                              "[ERROR] create model output failed")
        return list(given)
    if 0 in sizes:
        raise GearRefused("[ERROR] can't malloc buffer, size is 0, create output failed",
                          "[ERROR] create model output failed")
    return sizes


def _written(real: bytes, buffer: int | None, args: argparse.Namespace, gears: FakeGears | None,
             gear: tuple[int, ...] | None) -> bytes | None:
    """OutputModelResult's bytes for one output: None where the gear's output does not fit the buffer."""
    if buffer is None:  # a static om: its outputs are the buffers' size
        return real
    if len(real) > buffer:
        return None
    if args.dymShape is not None:
        return real
    length = buffer
    if args.dymBatch and gears is not None and gear is not None:
        length = buffer // (max(g[0] for g in gears.gears) // gear[0])
    return real + UNWRITTEN * (length - len(real))


if __name__ == "__main__":
    sys.exit(main())

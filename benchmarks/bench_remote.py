"""`infer run --host` against a plain scp of the same folders, whole processes: ``python benchmarks/bench_remote.py
[--batches N ...] [--rounds N] [--quick]``.

What a user does by hand to run an om on an Ascend server is `scp -r model.om bins/ server:work/` and then msame
there; infer sends a file only when its digest is not on the host yet. This starts a real sshd on 127.0.0.1 (the
tests' own: tests/infer/remote/sshd.py, the fake msame on its PATH), makes an om the fake runs (a ReduceMean over
8x32x32x3 float32 batches, 96 KiB each) and N batches of bins (default 500 and 2000: how the cost grows), runs
`infer run --host` once (the first run: everything sent), then alternates (`endtoend.alternate`), each a whole
process over a fresh connection:
- `infer run --host` again (the second run: connect, list the store, send nothing, run msame there, fetch the
  outputs back, check and move them into the run's layout);
- `scp -r` of the om and the bins folder to the host (only the copy: no tool run, no outputs back).
The figures: the second run's transfer step (run.json's ``remote.sent.seconds``: the store listed, what is missing
sent; and ``remote.sent.bytes``, 0) against the copy's whole process, and the whole second run against the copy for
scale. No target: loopback makes the copy as cheap as it will ever be; over a real network the bytes are what
costs. The outputs of the second run are checked equal to the first's, byte for byte.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from binio.binfile import sha256_file
from binio.spec import TensorSpec
from infer.contract import ConvertedInfo, ModelContract, SourceInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from endtoend import ROOT, Row, Side, alternate, infer_command, same_files

sys.path.insert(0, str(ROOT))
from tests.builders.bins import write_dataset
from tests.infer.remote.sshd import SshServer, start_sshd  # the tests' sshd, on loopback
from tests.infer.run_data import om_carrying

SHAPE = (8, 32, 32, 3)


def build_model(folder: Path) -> ModelContract:
    """x:0 float32 (8, 32, 32, 3) -> mean:0 (8,), as an om the fake msame runs wherever it is copied."""
    from onnx import TensorProto, helper

    folder.mkdir(parents=True)
    graph = helper.make_graph([helper.make_node("ReduceMean", ["x:0"], ["mean:0"], axes=[1, 2, 3], keepdims=0)],
                              "bench", [helper.make_tensor_value_info("x:0", TensorProto.FLOAT, list(SHAPE))],
                              [helper.make_tensor_value_info("mean:0", TensorProto.FLOAT, [SHAPE[0]])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    om = om_carrying(folder / "model.om", model.SerializeToString())
    inputs, outputs = (TensorSpec("x:0", "float32", SHAPE),), (TensorSpec("mean:0", "float32", (SHAPE[0],)),)
    return ModelContract(path=folder / "model.json", pb="model.pb", pb_sha256="",
                         source=SourceInfo(path="onnx.helper", kind="pb", tf_version="", frozen_with_tf=""),
                         inputs=inputs, outputs=outputs,
                         converted=ConvertedInfo(target="om", path="model.om", sha256=sha256_file(om), inputs=inputs,
                                                 outputs=outputs, soc_version="Ascend310P3")).save()


def _host_flags(server: SshServer) -> list[str]:
    return ["--host", server.host, *(f"--ssh-option={option}" for option in server.options().ssh_options)]


def _scp(server: SshServer, sources: list[Path], target: str) -> list[str]:
    """scp as a user runs it: a new connection, the same key and known_hosts."""
    options = [part for option in server.options().ssh_options for part in ("-o", option)]
    return ["scp", "-q", "-r", "-o", "BatchMode=yes", *options, "-P", str(server.port), *map(str, sources),
            f"{server.user}@127.0.0.1:{target}"]


def _remote(run_json: Path) -> dict[str, dict[str, float]]:
    document: dict[str, dict[str, dict[str, float]]] = json.loads(run_json.read_text())
    return document["remote"]


def _same_outputs(ours: Path, theirs: Path) -> str:
    """The second run's outputs (its first run folder under `ours`) against the first run's."""
    return same_files(next(ours.iterdir()), next(theirs.iterdir()))


def _second_runs(out: Path) -> list[dict[str, dict[str, float]]]:
    return [_remote(path) for path in sorted(out.glob("*/run.json"))]


def measure(batch_counts: tuple[int, ...], rounds: int) -> list[Row]:
    import statistics

    from endtoend import run_once

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as scratch:
        root = Path(scratch)
        server = start_sshd(root / "sshd")
        try:
            model = build_model(root / "model")
            for count in batch_counts:
                rng = np.random.default_rng(count)
                bins = write_dataset(root / f"bins{count}", {"x:0": [rng.standard_normal(SHAPE).astype(np.float32)
                                                                     for _ in range(count)]}).root
                size = sum(p.stat().st_size for p in bins.rglob("*.bin")) + (model.folder / "model.om").stat().st_size
                first = root / f"first{count}"
                seconds, _, _ = run_once(Side("first", infer_command("run", model.path, "--input", bins, "-o", first,
                                                                     *_host_flags(server))))
                sent = _remote(next(first.glob("*/run.json")))["sent"]
                print(f"{count} batches, {size / 1e6:.1f} MB: first run {seconds:.2f} s, sent {sent['files']} files "
                      f"({sent['bytes'] / 1e6:.1f} MB) in {sent['seconds']:.2f} s")
                again = root / f"again{count}"  # every second run's folder kept: their run.json say what was sent
                ours, theirs = "infer run --host, again", "scp -r om bins"
                result = alternate(
                    [Side(ours, infer_command("run", model.path, "--input", bins, "-o", again, *_host_flags(server))),
                     Side(theirs, _scp(server, [model.folder / "model.om", bins], f"scp{count}"))],
                    rounds, check=functools.partial(_same_outputs, again, first))
                records = _second_runs(again)
                step = statistics.median(r["sent"]["seconds"] for r in records)
                steps = [r["sent"]["seconds"] for r in records]
                fetch = statistics.median(r["fetched"]["seconds"] for r in records)
                sent_again = sum(r["sent"]["bytes"] for r in records)
                kept = records[0]["kept"]["files"]
                copy = result.runs[theirs]
                rows.append((f"remote: {count} batches ({size / 1e6:.0f} MB), second run's transfer vs scp -r: time",
                             step / copy.median,
                             f"the second run's transfer step (list the store, send what is missing: "
                             f"{sent_again} bytes in {len(records)} runs, {kept} files kept there) {step:.2f} s "
                             f"({min(steps):.2f}-{max(steps):.2f}) vs {theirs} {copy.describe()} (the same folders, "
                             f"{size / 1e6:.1f} MB every time); the first run sent {sent['files']} files in "
                             f"{sent['seconds']:.2f} s; {result.load()}; no target, lower is better"))
                rows.append((f"remote: {count} batches, whole second run vs scp -r: time", result.ratio(ours, theirs),
                             f"{ours} {result.runs[ours].describe()} (connect, transfer step, msame there on "
                             f"{count} batches, fetch {count} outputs in {fetch:.2f} s, move them into the layout) vs "
                             f"the copy alone; {rounds} rounds, {result.load()}; {result.equal}; for scale"))
        finally:
            server.stop()
    for name, ratio, note in rows:
        print(f"{name}: {ratio:.2f}x  ({note})")
    return rows


def main(quick: bool = False) -> list[Row]:
    return measure((50,) if quick else (500, 2000), rounds=1 if quick else 5)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", help="default 500 2000; 50 with --quick")
    parser.add_argument("--rounds", type=int, help="default 5; 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="fewer batches, one round")
    args = parser.parse_args()
    measure(tuple(args.batches or ((50,) if args.quick else (500, 2000))),
            rounds=args.rounds or (1 if args.quick else 5))

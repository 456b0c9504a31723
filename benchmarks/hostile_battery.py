"""A battery of hostile, faulty and abusive inputs in the classes of issue 43, each run as a user would run it (`infer
...` in a child process, with a time limit), each outcome graded:

- OK: a result, or one ``error:`` line naming what was expected (the file, the option, the node), exit code 2, in
  time, nothing written outside the output folder, nothing of a secret echoed;
- WEAK: refused, but the line does not name what it should, or it took long (> 60 s of CPU);
- BAD: a traceback, a death by signal, a hang, exit 0 on what should be refused, a file written outside, a secret
  leaked.

``python benchmarks/hostile_battery.py [WORKDIR] [--only CLASS]`` prints one line per case and a table per class.
By hand, not in the suite: it starts TensorFlow a few hundred times.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30
SECRET = "battery-secret-7f3a9c"
LIMIT_S = 600  # wall seconds before a case counts as hung (generous: a shared machine is slow)
SLOW_S = 60  # CPU seconds (the child's own, which a busy machine does not inflate) before it counts as slow


@dataclass
class Case:
    klass: str
    name: str
    args: Sequence[str | Path]
    expect: str = "refused"  # refused | ok | either
    names: Sequence[str] = ()  # what the error line must name (one of them)
    outside: Sequence[Path] = ()  # files that must not exist after the run
    fsize: int | None = None  # RLIMIT_FSIZE: a full disk
    setup: Callable[[], None] | None = None
    cwd: Path | None = None


@dataclass
class Outcome:
    case: Case
    grade: str
    why: str
    seconds: float
    rss: int
    code: int
    line: str = ""
    extra: dict[str, str] = field(default_factory=dict)


def run_case(case: Case) -> Outcome:
    if case.setup is not None:
        case.setup()

    def limits() -> None:
        if case.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen([sys.executable, "-m", "infer", *map(str, case.args)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=limits, cwd=case.cwd)
    try:
        out, err = process.communicate(timeout=LIMIT_S)
        hung = False
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        hung = True
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)  # this child's: they run in turn
    rss = after.ru_maxrss * 1024  # the largest child so far: an upper bound
    code = process.returncode
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    line = lines[0] if lines else ""
    written = [str(p) for p in case.outside if p.exists()]

    def grade(kind: str, why: str) -> Outcome:
        return Outcome(case, kind, why, seconds, rss, code, line)

    if hung:
        return grade("BAD", f"hung past {LIMIT_S} s")
    if code < 0:
        return grade("BAD", f"died of signal {-code}")
    if "Traceback" in err:
        return grade("BAD", "traceback: " + err.strip().splitlines()[-1][:160])
    if written:
        return grade("BAD", f"wrote {', '.join(written)}")
    if SECRET in out + err:
        quoted = [line for line in err.splitlines() if SECRET in line and "..." in line and "'" in line]
        if not quoted:
            return grade("BAD", "echoed the secret")
        secret_seen = "echoed a short excerpt holding the secret (the issue allows a short excerpt)"
    else:
        secret_seen = ""
    if case.expect == "refused" and code == 0:
        return grade("BAD", "accepted (exit 0)")
    if case.expect == "ok" and code != 0:
        return grade("WEAK", f"refused what should run: {line or err.strip()[-160:]}")
    if code not in (0, 2):
        return grade("BAD", f"exit {code}: {err.strip()[-160:]}")
    if code == 2 and (len(lines) != 1 or len(line) > 1100):
        return grade("WEAK", f"{len(lines)} error lines, {len(line)} characters")
    if code == 2 and case.names and not any(str(n) in line for n in case.names):
        return grade("WEAK", f"does not name {case.names[0]}: {line[:160]}")
    if cpu > SLOW_S:
        return grade("WEAK", f"took {cpu:.0f} s of CPU")
    if secret_seen:
        return grade("WEAK", secret_seen)
    return grade("OK", line[:160] if code else "result")


# --- the material ---------------------------------------------------------------------------------------------------

class World:
    """What the cases start from, built once with infer itself."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.secret = root / "private" / "secret.txt"
        self.outside = root / "private" / "written.txt"
        self.secret.parent.mkdir(parents=True, exist_ok=True)
        self.secret.write_text(SECRET)
        sys.path.insert(0, str(ROOT))
        from tests.models import build_small_cnn

        self.ckpt = build_small_cnn(root / "ckpt").prefix
        self.infer("freeze", self.ckpt, "--outputs", "probs", "--batch", "2", "-o", root / "model")
        self.infer("freeze", self.ckpt, "--outputs", "probs", "--batch", "-1", "-o", root / "dynamic")
        self.model = root / "model" / "model.json"
        self.infer("convert", self.model, "--target", "onnx", "--precision-mode", "must_keep_origin_dtype")
        self.infer("dump-bin", "random:0", "-m", self.model, "-o", root / "bins")
        self.bins = root / "bins"
        self.infer("run", self.model, "--input", self.bins, "-o", root / "runs")
        self.actual = next((root / "runs").iterdir())

    @staticmethod
    def infer(*args: str | Path) -> None:
        subprocess.run([sys.executable, "-m", "infer", *map(str, args)], check=True, capture_output=True)

    def fresh(self, name: str) -> Path:
        folder = self.root / "cases" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder


def _acting_graphs(world: World) -> list[Case]:
    """Class 1: graphs whose ops act, as a meta graph, a pb and a SavedModel, per op family."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    secret, written = world.secret, world.outside
    families = {
        "ReadFile": lambda x: x * tf.cast(tf.strings.length(tf.io.read_file(str(secret))), tf.float32),
        "WriteFile": lambda x: _after(tf.io.write_file(str(written), "owned"), x),
        "PyFunc": lambda x: tf.numpy_function(lambda a: a, [x], tf.float32),
        "PrintV2-file": lambda x: _after(tf.print(x, output_stream=f"file://{written}"), x),
        "TextLineDataset": lambda x: x + tf.cast(tf.strings.length(tf.data.experimental.get_single_element(
            tf.data.TextLineDataset(str(secret)).take(1))), tf.float32),
        "MatchingFiles": lambda x: x * tf.cast(tf.size(tf.io.matching_files(str(secret.parent / "*"))), tf.float32),
        "DebugIdentity": lambda x: tf.raw_ops.DebugIdentity(input=x, debug_urls=[f"file://{written.parent}/dbg"]),
        "Queue": lambda x: x + tf.queue.FIFOQueue(2, [tf.float32], shapes=[[]]).dequeue(),
        "SaveV2": lambda x: _after(tf.raw_ops.SaveV2(prefix=str(written), tensor_names=["x"], shape_and_slices=[""],
                                                      tensors=[tf.constant(1.0)]), x),
        "in-function": lambda x: _in_function(written)(x),
        "shape-at-import": lambda x: tf.reshape(x, tf.stack([-1, tf.strings.length(tf.io.read_file(str(secret)))
                                                             * 0 + 4])),
    }
    cases: list[Case] = []
    for family, build in families.items():
        folder = world.fresh(f"acting-{family}")
        graph = tf.Graph()
        with graph.as_default():
            x = tf1.placeholder(tf.float32, [None, 4], name="x")
            w = tf1.get_variable("w", [4, 4], initializer=tf1.ones_initializer())
            tf.reshape(build(tf.matmul(x, w)), [-1, 4], name="y")  # a known shape, whatever the op gives
            saver = tf1.train.Saver()
            with tf1.Session(graph=graph) as session:
                session.run(tf1.global_variables_initializer())
                prefix = saver.save(session, str(folder / "ckpt" / "model.ckpt"))
                frozen = tf1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(), ["y"])
                builder = tf1.saved_model.Builder(str(folder / "saved"))
                builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={
                    "serving_default": tf1.saved_model.predict_signature_def({"x": x}, {"y": graph.get_tensor_by_name(
                        "y:0")})})
                builder.save()
        (folder / "g.pb").write_bytes(frozen.SerializeToString())
        written.unlink(missing_ok=True)
        # Every family from a meta graph; a pb and a SavedModel, and inspect, for every third (each case starts
        # TensorFlow: the whole set takes hours on a busy machine).
        sources = (("meta", prefix), ("pb", folder / "g.pb"), ("saved_model", folder / "saved"))
        for kind, source in sources if len(cases) % 3 == 0 else sources[:1]:
            cases.append(Case("1 a model file acts", f"{family} in a {kind}: freeze",
                              ("freeze", source, "--outputs", "y", "--batch", "1", "-o", folder / f"out-{kind}"),
                              names=("the graph holds ops that act on this machine",), outside=(written,)))
            if kind == "pb":
                cases.append(Case("1 a model file acts", f"{family} in a {kind}: inspect", ("inspect", source),
                                  expect="either", outside=(written,)))
        contract = _contract_for(world, folder / "g.pb", folder / "model")
        cases.append(Case("1 a model file acts", f"{family} pb: run -b tf",
                          ("run", contract, "--input", folder / "bins", "-o", folder / "runs", "-b", "tf"),
                          names=("model.pb",), outside=(written,), setup=functools.partial(_bins, contract, folder)))
        if family in ("ReadFile", "PyFunc", "shape-at-import"):
            cases.append(Case("1 a model file acts", f"{family} pb: convert", ("convert", contract, "--target",
                                                                               "onnx"),
                              names=("model.pb",), outside=(written,)))
    keras = world.fresh("keras")
    _lambda_keras(keras)
    for name in ("lam.keras", "lam.h5"):
        cases.append(Case("1 a model file acts", f"Keras Lambda {name}: inspect", ("inspect", keras / name),
                          names=("Lambda",), outside=(written,)))
        cases.append(Case("1 a model file acts", f"Keras Lambda {name}: freeze",
                          ("freeze", keras / name, "--outputs", "probs", "-o", keras / "out"), names=("Lambda",),
                          outside=(written,)))
    return cases


def _after(op: object, x: object) -> object:
    import tensorflow as tf

    with tf.control_dependencies([op]):
        return tf.identity(x)


def _in_function(written: Path) -> Callable[[object], object]:
    import tensorflow as tf

    @tf.function
    def act(x: object) -> object:
        tf.io.write_file(str(written), "owned")
        return x

    return act


def _lambda_keras(folder: Path) -> None:
    import keras
    import tf_keras

    body = f"lambda t: t * 2 + (open({str(folder / 'ran')!r}, 'w').write('ran') and 0)"
    inputs = keras.Input((4,), name="x")
    keras.Model(inputs, keras.layers.Dense(3, name="probs")(keras.layers.Lambda(eval(body))(inputs))).save(
        folder / "lam.keras")
    legacy = tf_keras.Input((4,), name="x")
    tf_keras.Model(legacy, tf_keras.layers.Dense(3, name="probs")(tf_keras.layers.Lambda(eval(body))(legacy))).save(
        folder / "lam.h5")


def _contract_for(world: World, pb: Path, folder: Path) -> Path:
    from ckpt2pb.protobuf import HostOpPolicy, read_graph_def
    from infer.contract import SourceInfo
    from tests.builders.frozen import write_pb_and_contract

    graph_def = read_graph_def(pb, HostOpPolicy.ALLOW)
    for node in graph_def.node:
        if node.op == "Placeholder":
            node.attr["shape"].shape.dim[0].size = 1
    return write_pb_and_contract(folder, graph_def, ["x:0"], ["y:0"],
                                 SourceInfo(path="zoo", kind="pb", tf_version="", frozen_with_tf="")).path


def _bins(contract: Path, folder: Path) -> None:
    shutil.rmtree(folder / "bins", ignore_errors=True)
    World.infer("dump-bin", "random:0", "-m", contract, "-o", folder / "bins")


def _crashes(world: World, rng: random.Random) -> list[Case]:
    """Class 2: what TensorFlow would crash on, and random damage to a pb."""
    from tensorflow.core.framework import graph_pb2

    from tests.builders.graphs import const_graph_def  # on sys.path once the world is built

    folder = world.fresh("crashes")
    cases = []
    for call in ("direct", "PartitionedCall", "StatefulPartitionedCall", "If"):
        graph_def = graph_pb2.GraphDef()
        graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
        for name, callee in (("f", "g"), ("g", "f")):
            function = graph_def.library.function.add()
            function.signature.name = name
            function.signature.input_arg.add(name="x", type=1)
            function.signature.output_arg.add(name="y", type=1)
            node = function.node_def.add(name="c", op=callee if call == "direct" else call, input=["x"])
            if call in ("PartitionedCall", "StatefulPartitionedCall"):
                node.attr["f"].func.name = callee
                node.attr["Tin"].list.type.append(1)
                node.attr["Tout"].list.type.append(1)
            if call == "If":
                node.input[:] = ["x", "x"]
                node.attr["then_branch"].func.name = callee
                node.attr["else_branch"].func.name = callee
            function.ret["y"] = "x"
        graph_def.node.add(name="call", op="f", input=["x"])
        pb = folder / f"cycle-{call}.pb"
        pb.write_bytes(graph_def.SerializeToString())
        cases.append(Case("2 crashes", f"functions calling each other ({call}): inspect", ("inspect", pb),
                          names=(str(pb),)))
    for name, dims, content, values in (("short content", (1000, 1000), 8, 0), ("too many values", (2,), 0, 5),
                                        ("expands to TiB", (10**6, 10**6), 0, 1), ("negative dim", (-2, 3), 0, 0)):
        graph_def = const_graph_def(dims, b"\0" * content, [1.0] * values)
        pb = folder / f"const-{name.replace(' ', '-')}.pb"
        pb.write_bytes(graph_def.SerializeToString())
        cases.append(Case("2 crashes", f"constant {name}: freeze", ("freeze", pb, "--outputs", "y", "-o",
                                                                     folder / "out"), names=(str(pb),)))
    cases.append(Case("2 crashes", "freeze --batch 10^20",
                      ("freeze", world.ckpt, "--outputs", "probs", "--batch", "99999999999999999999", "-o",
                       folder / "out"), names=("--batch",)))
    cases += _structural_fuzz(world, folder, rng)
    original = (world.root / "model" / "model.pb").read_bytes()
    for index in range(16):
        damaged = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(damaged))
            damaged[at] = rng.randrange(256)
        if index % 3 == 0:
            damaged = damaged[: rng.randrange(1, len(damaged))]
        pb = folder / f"fuzz-{index:02d}.pb"
        pb.write_bytes(bytes(damaged))
        cases.append(Case("2 crashes", f"pb with random damage #{index}", ("inspect", pb), expect="either",
                          names=(str(pb),)))
    return cases


def _structural_fuzz(world: World, folder: Path, rng: random.Random) -> list[Case]:
    """The frozen pb parsed and changed where TensorFlow trusts it: an op's type, a dtype or shape attribute, a
    constant's dtype or dims, an input renamed or made a control input, a node duplicated; each inspected and run."""
    from tensorflow.core.framework import graph_pb2

    from ckpt2pb.protobuf import HostOpPolicy, read_graph_def

    base = read_graph_def(world.root / "model" / "model.pb", HostOpPolicy.ALLOW)
    ops = sorted({node.op for node in base.node} | {"Reshape", "Conv2D", "MatMul", "Identity", "ConcatV2", "Pack",
                                                    "StridedSlice", "Gather", "Fill", "Range", "While", "If"})
    cases = []
    for index in range(24):
        graph_def = graph_pb2.GraphDef()
        graph_def.CopyFrom(base)
        node = rng.choice(list(graph_def.node))
        change = rng.choice(["op", "dtype", "shape", "const-dtype", "const-dims", "input", "control", "twice"])
        if change == "op":
            node.op = rng.choice(ops)
        elif change == "dtype" and any(a.HasField("type") for a in node.attr.values()):
            key = next(k for k, a in node.attr.items() if a.HasField("type"))
            node.attr[key].type = rng.choice([0, 3, 7, 9, 10, 17, 20, 21, 99])
        elif change == "shape" and "shape" in node.attr:
            node.attr["shape"].shape.dim.add().size = rng.choice([-5, 0, 2**40])
        elif change in ("const-dtype", "const-dims"):
            const = next((n for n in graph_def.node if n.op == "Const"), node)
            tensor = const.attr["value"].tensor
            if change == "const-dtype":
                tensor.dtype = rng.choice([2, 3, 7, 9, 19])
            else:
                tensor.tensor_shape.dim.add().size = rng.choice([0, 3, 10**7])
        elif change == "input" and node.input:
            node.input[rng.randrange(len(node.input))] = rng.choice([n.name for n in graph_def.node]) + ":7"
        elif change == "control":
            node.input.append("^" + rng.choice([n.name for n in graph_def.node]))
        else:
            graph_def.node.add().CopyFrom(node)
        pb = folder / f"mutant-{index:02d}.pb"
        pb.write_bytes(graph_def.SerializeToString())
        cases.append(Case("2 crashes", f"pb mutant #{index} ({change} of {node.name})", ("inspect", pb),
                          expect="either", names=(str(pb),)))
        if index % 3 == 0:
            model = world.fresh(f"mutant-{index}") / "model"
            shutil.copytree(world.root / "model", model)
            (model / "model.pb").write_bytes(pb.read_bytes())
            document = json.loads((model / "model.json").read_text())
            document.pop("converted", None)
            document["frozen"]["sha256"] = hashlib.sha256(pb.read_bytes()).hexdigest()  # the mutant is the model
            (model / "model.json").write_text(json.dumps(document))
            cases.append(Case("2 crashes", f"pb mutant #{index} ({change}): run -b tf",
                              ("run", model / "model.json", "--input", world.bins, "-o", model.parent / "runs",
                               "-b", "tf"), expect="either", names=("model.pb", "model.json")))
    return cases


def _png(path: Path, width: int, height: int, depth: int = 8, colour: int = 2) -> Path:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, 0,
                                                                       0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))
    return path


def _images(world: World) -> list[Case]:
    """Class 3: images whose decoding or resizing would take without bound, or whose pixels are not 8-bit."""
    from PIL import Image

    cases = []

    def folder_with(name: str, make: Callable[[Path], object], *extra: str, expect: str = "refused") -> None:
        folder = world.fresh(f"image-{name}") / "images"
        folder.mkdir()
        make(folder)
        cases.append(Case("3 images", name, ("dump-bin", "-m", world.model, folder, "-o", folder.parent / "out",
                                             *extra), expect=expect, names=(str(folder),)))

    folder_with("50000x50000 PNG bomb", lambda f: _png(f / "bomb.png", 50_000, 50_000))
    folder_with("12000x12000 PNG", lambda f: _png(f / "big.png", 12_000, 12_000))
    folder_with("1x1000000 strip, --resize 16",
                lambda f: Image.new("L", (1_000_000, 1)).save(f / "strip.png"), "--resize", "16")
    folder_with("65535x1 BMP header", lambda f: _bmp(f / "wide.bmp", 65_535, 1), "--resize", "300")
    folder_with("16-bit greyscale", lambda f: Image.fromarray(
        np.linspace(0, 59_850, 64, dtype=np.uint16).reshape(8, 8), mode="I;16").save(f / "deep.png"))
    folder_with("32-bit integer greyscale", lambda f: Image.fromarray(np.full((8, 8), 70_000, np.int32),
                                                                        mode="I").save(f / "wide.png"))
    folder_with("truncated JPEG", lambda f: f.joinpath("cut.jpg").write_bytes(
        _jpeg_bytes()[:200]))
    folder_with("zero-size PNG header", lambda f: _png(f / "empty.png", 0, 0))
    folder_with("ordinary 8-bit", lambda f: Image.new("RGB", (20, 12), (10, 20, 30)).save(f / "fine.png"),
                expect="ok")
    cases.append(Case("3 images", "--resize 100000", ("dump-bin", "-m", world.model, "random:0", "-o",
                                                      world.fresh("resize") / "out", "--resize", "100000"),
                      names=("--resize",)))
    return cases


def _bmp(path: Path, width: int, height: int) -> None:
    header = struct.pack("<2sIHHI", b"BM", 54, 0, 0, 54) + struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0,
                                                                       0, 2835, 2835, 0, 0)
    path.write_bytes(header + b"\0" * 16)


def _jpeg_bytes() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (1, 2, 3)).save(buffer, "JPEG")
    return buffer.getvalue()


def _arrays(world: World, rng: random.Random) -> list[Case]:
    """Class 4: .npy headers that lie, as a dump-bin source and as labels."""
    cases = []
    folder = world.fresh("arrays")
    shapes = [(10**12, 10**12), (2**62, 8), (0, 2**62), (1000, 1000), (2, 8, 8, 3), (-1, 3)]
    for index, shape in enumerate(shapes):
        path = folder / f"claim-{index}.npy"
        text = "{'descr': '<f4', 'fortran_order': False, 'shape': " + repr(tuple(shape)) + ", }"
        header = text.encode().ljust(118) + b"\n"
        path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\0" * 64)
        expect = "either" if shape == (2, 8, 8, 3) else "refused"
        cases.append(Case("4 arrays", f"npy claiming {shape}: dump-bin",
                          ("dump-bin", "-m", world.model, path, "-o", folder / f"out-{index}"), expect=expect,
                          names=(str(path),)))
        cases.append(Case("4 arrays", f"npy claiming {shape}: labels",
                          ("compare", world.model, "--input", world.bins, "--actual", world.actual, "--labels", path),
                          expect="refused", names=(str(path),)))
    for index in range(8):
        path = folder / f"random-{index}.npy"
        path.write_bytes(b"\x93NUMPY" + bytes(rng.randrange(256) for _ in range(rng.randrange(4, 200))))
        cases.append(Case("4 arrays", f"npy of random bytes #{index}",
                          ("dump-bin", "-m", world.model, path, "-o", folder / f"rand-{index}"), names=(str(path),)))
    target = world.fresh("target") / "model.json"
    shutil.copytree(world.root / "model", target.parent, dirs_exist_ok=True)
    document = json.loads(target.read_text())
    document["converted"]["target"] = "tpu"
    target.write_text(json.dumps(document))
    cases.append(Case("4 arrays", "model.json converted.target 'tpu': run",
                      ("run", target, "--input", world.bins, "-o", target.parent / "runs"), names=(str(target),)))
    return cases


def _fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def _hangs(world: World) -> list[Case]:
    """Class 5: FIFOs where every reader reads, and a document of a FIFO."""
    folder = world.fresh("fifos")
    cases = []
    for name in ("g.pb", "m.meta", "m.keras", "m.h5", "m.om", "saved_model.pb"):
        if name == "saved_model.pb":
            (folder / "saved").mkdir()
            fifo = _fifo(folder / "saved" / name)
            source: Path = folder / "saved"
        else:
            fifo = source = _fifo(folder / name)
        cases.append(Case("5 hangs", f"FIFO {name}: inspect", ("inspect", source), names=(str(fifo),)))
    fifo = _fifo(folder / "data.npy")
    cases.append(Case("5 hangs", "FIFO .npy: dump-bin", ("dump-bin", "-m", world.model, fifo, "-o", folder / "o"),
                      names=(str(fifo),)))
    for flag, name in (("--keep-dtype", "k.cfg"), ("--customize-dtypes", "c.cfg"), ("--modify-mixlist", "m.json"),
                       ("--aipp-config", "aipp.cfg")):
        fifo = _fifo(folder / name)
        extra = ("--precision-mode", "allow_mix_precision") if flag == "--modify-mixlist" else \
            ("--precision-mode", "allow_fp32_to_fp16") if flag != "--aipp-config" else ()
        copy = world.fresh(f"fifo-model-{name}") / "model"
        shutil.copytree(world.root / "model", copy)
        cases.append(Case("5 hangs", f"FIFO {flag}", ("convert", copy / "model.json", "--target", "onnx", *extra,
                                                      flag, fifo), names=(str(fifo),)))
    fifo = _fifo(folder / "labels.txt")
    cases.append(Case("5 hangs", "FIFO --labels", ("compare", world.model, "--input", world.bins, "--actual",
                                                    world.actual, "--labels", fifo), names=(str(fifo),)))
    fifo = _fifo(folder / "pipeline.toml")
    cases.append(Case("5 hangs", "FIFO pipeline.toml", ("pipeline", "run", fifo), names=(str(fifo),)))
    bins = world.fresh("fifo-bins") / "bins"
    shutil.copytree(world.bins, bins)
    fifo = _fifo(bins / "dataset.json")
    cases.append(Case("5 hangs", "FIFO dataset.json", ("bin-info", bins), names=(str(fifo),)))
    return cases


def _counts(world: World) -> list[Case]:
    """Class 6: counts past what the machine and the data allow."""
    folder = world.fresh("counts")
    dynamic = world.root / "dynamic" / "model.json"
    runs = (
        ("run --loop 10^20", ("run", world.model, "--input", world.bins, "-o", folder / "a", "--loop",
                              "99999999999999999999"), "--loop"),
        ("run --threads 1000", ("run", world.model, "--input", world.bins, "-o", folder / "b", "--threads", "1000"),
         "--threads"),
        ("run --warmup 10^9", ("run", world.model, "--input", world.bins, "-o", folder / "c", "--warmup",
                               "1000000000"), "--warmup"),
        ("run --timeout inf", ("run", world.model, "--input", world.bins, "-o", folder / "d", "--timeout", "inf"),
         "--timeout"),
        ("dump-bin --workers 300", ("dump-bin", "random:0", "-m", world.model, "-o", folder / "e", "--workers",
                                    "300"), "--workers"),
        ("compare --workers 300", ("compare", world.model, "--input", world.bins, "--actual", world.actual,
                                   "--workers", "300"), "--workers"),
        ("convert --timeout 0", ("convert", dynamic, "--target", "onnx", "--timeout", "0"), "--timeout"),
        ("convert --timeout nan", ("convert", dynamic, "--target", "onnx", "--timeout", "nan"), "--timeout"),
        ("convert --dynamic-batch 1,10^9", ("convert", dynamic, "--target", "onnx", "--dynamic-batch",
                                            "1,1000000000"), "--dynamic-batch"),
        ("convert --dynamic-batch 1,10^20", ("convert", dynamic, "--target", "onnx", "--dynamic-batch",
                                             "1,99999999999999999999"), "--dynamic-batch"),
        ("convert --input-format XYZ", ("convert", dynamic, "--target", "onnx", "--input-format", "XYZ"),
         "--input-format"),
        ("convert --soc-version ''", ("convert", dynamic, "--target", "onnx", "--soc-version", ""), "--soc-version"),
        ("freeze --batch 10^6 (verification memory)", ("freeze", world.ckpt, "--outputs", "probs", "--batch",
                                                       "1000000", "-o", folder / "f"), "either"),
        ("dump-bin --std -1", ("dump-bin", "random:0", "-m", world.model, "-o", folder / "g", "--std", "-1"), "--std"),
        ("compare --report ''", ("compare", world.model, "--input", world.bins, "--actual", world.actual, "--report",
                                 ""), "--report"),
        ("bin-info --shape 10^20", ("bin-info", world.bins / "images" / "000000.bin", "--dtype", "float32",
                                    "--shape", "99999999999999999999"), "000000.bin"),
    )
    cases = []
    for name, args, named in runs:
        expect = "either" if named == "either" else "refused"
        cases.append(Case("6 unbounded counts", name, args, expect=expect, names=(named,) if expect == "refused"
                          else ()))
    return cases


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def _huge(world: World) -> list[Case]:
    """Class 7: files of gigabytes (sparse) where every reader reads."""
    folder = world.fresh("huge")
    cases = [
        Case("7 huge files", "4 GiB pb", ("inspect", _sparse(folder / "g.pb", 4 * GiB + 1, b"\x0a")),
             names=("g.pb",)),
        Case("7 huge files", "4 GiB meta", ("inspect", _sparse(folder / "m.meta", 4 * GiB, b"\x12")),
             names=("m.meta",)),
        Case("7 huge files", "1 GiB pipeline.toml", ("pipeline", "run", _sparse(folder / "p.toml", GiB, b"[model]\n")),
             names=("p.toml",)),
        Case("7 huge files", "1 GiB labels of NUL", ("compare", world.model, "--input", world.bins, "--actual",
                                                     world.actual, "--labels", _sparse(folder / "labels.txt", GiB)),
             names=("labels.txt",)),
        Case("7 huge files", "4 GiB labels .npy", ("compare", world.model, "--input", world.bins, "--actual",
                                                   world.actual, "--labels",
                                                   _sparse(folder / "labels.npy", 4 * GiB, _npy_head((2**30,)))),
             names=("labels.npy",)),
        Case("7 huge files", "4 GiB .npy source (streamed)", ("dump-bin", "-m", world.model,
                                                              _sparse(folder / "big.npy", 4 * GiB,
                                                                      _npy_head((2**32 // 768, 8, 8, 3))),
                                                              "-o", folder / "o", "--samples", "4"), expect="ok"),
    ]
    for flag, name in (("--keep-dtype", "k.cfg"), ("--customize-dtypes", "c.cfg")):
        copy = world.fresh(f"huge-model-{name}") / "model"
        shutil.copytree(world.root / "model", copy)
        cases.append(Case("7 huge files", f"1 GiB {flag} of NUL",
                          ("convert", copy / "model.json", "--target", "onnx", "--precision-mode",
                           "allow_fp32_to_fp16", flag, _sparse(folder / name, GiB)), names=(name,)))
    big_name = folder / "long.cfg"
    big_name.write_text("x" * 50_000_000 + "\n")
    copy = world.fresh("huge-model-long") / "model"
    shutil.copytree(world.root / "model", copy)
    cases.append(Case("7 huge files", "one 50 MB op name in --keep-dtype",
                      ("convert", copy / "model.json", "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                       "--keep-dtype", big_name), names=("long.cfg",)))
    bins = world.fresh("huge-bins") / "bins"
    shutil.copytree(world.bins, bins)
    _sparse(bins / "dataset.json", 2 * GiB, b"{")
    cases.append(Case("7 huge files", "2 GiB dataset.json", ("bin-info", bins), names=("dataset.json",)))
    model = world.fresh("huge-contract") / "model"
    shutil.copytree(world.root / "model", model)
    _sparse(model / "model.json", 2 * GiB, b"{")
    cases.append(Case("7 huge files", "2 GiB model.json", ("run", model / "model.json", "--input", world.bins, "-o",
                                                           model.parent / "runs"), names=("model.json",)))
    om = world.fresh("huge-om") / "big.om"
    table = struct.pack("<I4x", 1) + struct.pack("<I4xQQ", 0, 0, 4 * GiB)
    header = bytearray(256)
    struct.pack_into("<III", header, 0, 0x444F4D49, 256, 0x20000000)
    struct.pack_into("<I", header, 152, 2)
    struct.pack_into("<I", header, 156, 1)
    header[180] = 1
    struct.pack_into("<Q", header, 184, len(table) + 4 * GiB)
    _sparse(om, 256 + len(table) + 4 * GiB, bytes(header) + table)
    cases.append(Case("7 huge files", "4 GiB om MODEL_DEF partition", ("inspect", om), names=("big.om",)))
    return cases


def _npy_head(shape: tuple[int, ...]) -> bytes:
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': " + repr(shape) + ", }"
    header = text.encode().ljust(118) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


def _half_written(world: World) -> list[Case]:
    """Class 8: what a refusal leaves, full disks, links, and what errors echo."""
    cases = []
    folder = world.fresh("half")
    (folder / "empty.pb").write_bytes(b"")
    (folder / "pipeline.toml").write_text('[model]\nsource = "empty.pb"\noutputs = ["y"]\n[data]\nsource = '
                                          '"random:0"\n')
    cases.append(Case("8 half-written and leaks", "pipeline refused at load leaves no work/",
                      ("pipeline", "run", folder / "pipeline.toml"), names=("empty.pb",),
                      outside=(folder / "work",)))
    (folder / "w2").mkdir()
    (folder / "w2" / "pipeline.toml").write_text('[model]\nsource = "m"\noutputs = ["y"]\n[data]\nsource = '
                                                 '"random:0"\n[paths]\nwork_dir = ""\n')
    cases.append(Case("8 half-written and leaks", "work_dir = ''", ("pipeline", "run", folder / "w2" /
                                                                    "pipeline.toml"), names=("work_dir",)))
    # The file size limit stands in for a full disk: each output's first file is larger (model.pb 1.4 kB, a batch
    # file 1.5 kB, the npy 1.7 kB); what a refusal must not leave is the case's `outside`.
    for name, args, left in (
            ("freeze onto a full disk", ("freeze", world.ckpt, "--outputs", "probs", "--batch", "2", "-o",
                                         folder / "frozen"), folder / "frozen"),
            ("bin-info --to-npy onto a full disk", ("bin-info", world.bins, "--to-npy", folder / "npy.npy"),
             folder / "npy.npy"),
            ("dump-bin onto a full disk", ("dump-bin", "random:0", "-m", world.model, "-o", folder / "bins",
                                           "--samples", "64"), folder / "bins"),
    ):
        cases.append(Case("8 half-written and leaks", name, args, fsize=1000, names=(str(folder),),
                          outside=(left,)))
    victim = folder / "victim.pb"
    victim.write_text("keep")
    linked = folder / "linked"
    linked.mkdir()
    (linked / "model.pb").symlink_to(victim)
    cases.append(Case("8 half-written and leaks", "--force onto a model.pb linked out",
                      ("freeze", world.ckpt, "--outputs", "probs", "--batch", "2", "-o", linked, "--force"),
                      names=("model.pb",)))
    shadow = folder / "shadow"
    shadow.write_text(f"root:{SECRET}:19000:0:99999:7:::\n")
    copy = world.fresh("half-model") / "model"
    shutil.copytree(world.root / "model", copy)
    for flag in ("--keep-dtype", "--customize-dtypes", "--aipp-config"):
        extra = ("--precision-mode", "allow_fp32_to_fp16") if flag != "--aipp-config" else ("--aipp",)
        cases.append(Case("8 half-written and leaks", f"{flag} pointed at a secret",
                          ("convert", copy / "model.json", "--target", "onnx", *extra, flag, shadow),
                          names=("shadow",)))
    cases.append(Case("8 half-written and leaks", "--labels pointed at a secret",
                      ("compare", world.model, "--input", world.bins, "--actual", world.actual, "--labels", shadow),
                      names=("shadow",)))
    cases.append(Case("8 half-written and leaks", "a 100 kB output name",
                      ("freeze", world.ckpt, "--outputs", "p" * 100_000, "-o", folder / "long"), names=("output",)))
    return cases


CLASSES: dict[str, Callable[[World, random.Random], list[Case]]] = {
    "1": lambda w, r: _acting_graphs(w), "2": _crashes, "3": lambda w, r: _images(w), "4": _arrays,
    "5": lambda w, r: _hangs(w), "6": lambda w, r: _counts(w), "7": lambda w, r: _huge(w),
    "8": lambda w, r: _half_written(w),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", nargs="?", type=Path)
    parser.add_argument("--only", action="append", default=[], help="class numbers to run (1-8)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    args = parser.parse_args(argv)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="hostile-battery-"))
    from ckpt2pb.logs import quiet_tensorflow_environment

    quiet_tensorflow_environment(os.environ)  # the cases' children inherit it
    world = World(root)
    rng = random.Random(43)
    outcomes: list[Outcome] = []
    for key, make in CLASSES.items():
        if args.only and key not in args.only:
            continue
        for case in make(world, rng):
            outcome = run_case(case)
            outcomes.append(outcome)
            print(f"{outcome.grade:4} {case.klass}: {case.name} ({outcome.seconds:.1f} s) {outcome.why}", flush=True)
    print("\nclass                        OK  WEAK  BAD")
    for klass in sorted({o.case.klass for o in outcomes}):
        mine = [o.grade for o in outcomes if o.case.klass == klass]
        print(f"{klass:28} {mine.count('OK'):3} {mine.count('WEAK'):5} {mine.count('BAD'):4}")
    if args.json:
        args.json.write_text(json.dumps([{"class": o.case.klass, "case": o.case.name, "grade": o.grade, "why": o.why,
                                          "seconds": round(o.seconds, 1), "code": o.code} for o in outcomes],
                                        indent=1))
    return 1 if any(o.grade == "BAD" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())

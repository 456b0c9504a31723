"""Hostile input, round four (issue 43), what a model file or a user's file made infer do: crash, hang, allocate
without bound, write what it should not, or echo what it read. Each case is one ``error:`` line naming the file or
the option now, exit code 2, nothing left behind. Huge files are sparse; what crashed runs in a child process. The
graphs that act on the host are tests/ckpt2pb/test_host_ops.py's."""

from __future__ import annotations

import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from infer.contract import ModelContract
from tests.builders.graphs import const_graph_def
from tests.cli import Outcome, run_cli
from tests.hostile import fifo_at
from tests.infer.hostile_world import World, build_world

GiB = 2**30


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, onnx_small_cnn: ModelContract) -> World:
    return build_world(tmp_path_factory.mktemp("hostile-round4"), onnx_small_cnn)


@pytest.fixture
def mine(world: World, tmp_path: Path) -> World:
    return world.copy(tmp_path / "world")


def _refused(outcome: Outcome, expected: str) -> None:
    assert "Traceback" not in outcome.err, outcome.err
    assert (outcome.code, outcome.error_line) == (2, f"error: {expected}")


def _sparse(path: Path, size: int, head: bytes = b"") -> Path:
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def _child(*args: str | Path, limit_file: int | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`infer ARGS` in a child process: a crash there is a signal in its return code, not this test's death."""
    def limits() -> None:
        if limit_file is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file, limit_file))

    return subprocess.run([sys.executable, "-m", "infer", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, check=False, preexec_fn=limits)


# --- hangs: every reader refuses a FIFO before it opens it -----------------------------------------------------------

@pytest.mark.parametrize("name", ["g.pb", "m.keras", "m.h5", "g.meta", "g.om"])
def test_a_fifo_named_as_a_model_is_refused_unopened(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      name: str) -> None:
    with fifo_at(tmp_path / name) as fifo:
        outcome = run_cli(capsys, "inspect", fifo)
    assert outcome.code == 2 and outcome.error_line.startswith(f"error: {fifo}: a FIFO (named pipe), not a regular "
                                                               "file")


# --- accepted without a word: empty graphs -----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "what"), [("g.pb", "a frozen GraphDef"), ("m.meta", "a meta graph")])
def test_an_empty_graph_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                        what: str) -> None:
    (tmp_path / name).write_bytes(b"")
    _refused(run_cli(capsys, "inspect", tmp_path / name),
             f"{tmp_path / name}: an empty file (0 bytes); expected {what}")


def test_a_graph_of_no_nodes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.pb").write_bytes(b"\x22\x02\x08\x01")  # versions { producer: 1 }: a GraphDef, no node
    _refused(run_cli(capsys, "inspect", tmp_path / "g.pb"), f"{tmp_path / 'g.pb'}: the graph holds no nodes")


# --- what TensorFlow or numpy would crash on ------------------------------------------------------------------------

def _const_graph(path: Path, dims: tuple[int, ...], content: bytes = b"", floats: int = 0) -> Path:
    path.write_bytes(const_graph_def(dims, content, [1.0] * floats).SerializeToString())
    return path


@pytest.mark.parametrize(("dims", "content", "floats", "said"), [
    ((1000, 1000), b"\0" * 8, 0, "holds 8 bytes of data, its shape (1000,1000) float32 needs 4000000"),
    ((2,), b"", 5, "holds 5 values, more than the 2 of its shape (2)"),
    ((10**6, 10**6), b"", 1, "of shape (1000000,1000000) float32 expands to 3.6 TiB, more than a model file holds "
                             "(2.0 GiB)"),
    ((-3, 2), b"", 0, "has shape (-3,2): a constant's dims are 0 or more"),
])
@pytest.mark.parametrize("command", ["inspect", "freeze"])
def test_a_constant_that_disagrees_with_its_shape_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              dims: tuple[int, ...], content: bytes, floats: int,
                                                              said: str, command: str) -> None:
    """It gave numpy's `cannot reshape` traceback, or an allocation of terabytes."""
    pb = _const_graph(tmp_path / "g.pb", dims, content, floats)
    extra = ("--outputs", "y", "-o", tmp_path / "out") if command == "freeze" else ()
    _refused(run_cli(capsys, command, pb, *extra), f"{pb}: constant 'k' {said}")
    assert not (tmp_path / "out").exists()


def test_freeze_batch_past_any_dim_is_one_line(small_cnn_prefix: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _refused(run_cli(capsys, "freeze", small_cnn_prefix, "--outputs", "probs", "--batch", "99999999999999999999",
                     "-o", tmp_path / "out"),
             "--batch 99999999999999999999: expected 1 to 2147483647, or -1 to keep the first dim unknown")


@pytest.fixture(scope="module")
def small_cnn_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.models import build_small_cnn

    return build_small_cnn(tmp_path_factory.mktemp("cnn")).prefix


def test_a_checkpoint_variable_of_another_shape_is_named_with_both(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """d/w declared (4,3), stored (4,5): it was frozen and verified as a 5-class model."""
    import tensorflow as tf

    tf1 = tf.compat.v1

    def save(shape: tuple[int, int], folder: Path) -> Path:
        graph = tf.Graph()
        with graph.as_default():
            x = tf1.placeholder(tf.float32, [None, 4], name="x")
            w = tf1.get_variable("d/w", shape, use_resource=True)
            tf.nn.softmax(tf.matmul(x, w), name="probs")
            saver = tf1.train.Saver()
            with tf1.Session(graph=graph) as session:
                session.run(tf1.global_variables_initializer())
                return Path(saver.save(session, str(folder / "model.ckpt")))

    graph_prefix = save((4, 3), tmp_path / "declared")
    stored_prefix = save((4, 5), tmp_path / "stored")
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(f"{stored_prefix}{suffix}", f"{graph_prefix}{suffix}")
    _refused(run_cli(capsys, "freeze", graph_prefix, "--outputs", "probs", "--batch", "1", "-o", tmp_path / "out"),
             f"{graph_prefix}: variable 'd/w' is (4,3) in the graph, (4,5) in the checkpoint")


def test_to_npy_onto_a_full_disk_is_an_error_naming_the_file_not_a_signal(world: World, tmp_path: Path) -> None:
    """It wrote through a memory map: a page the disk had no room for killed it with SIGBUS, its temporary file
    left. The file size limit stands in for the full disk: the write fails the same way, with an errno."""
    import signal

    target = tmp_path / "out.npy"
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # inherited: the write fails with EFBIG, not the signal
    try:
        done = _child("bin-info", world.bins, "--to-npy", target, limit_file=1000)
    finally:
        signal.signal(signal.SIGXFSZ, previous)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stderr.startswith(f"error: {target / 'images.npy'}: write failed (File too large)")
    assert list(tmp_path.iterdir()) == []  # no temporary file, no partial npy, no folder of its making


@pytest.mark.slow
def test_freeze_onto_a_full_disk_leaves_no_model_folder(small_cnn_prefix: Path, tmp_path: Path) -> None:
    """A refusal on a full disk left an empty model folder. The file size limit stands in for the full disk: the
    pb's write fails with an errno, as it does when the disk is full."""
    import signal

    out = tmp_path / "model"
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # inherited: the write fails with EFBIG, not the signal
    try:
        done = _child("freeze", small_cnn_prefix, "--outputs", "probs", "--batch", "1", "-o", out, limit_file=100)
    finally:
        signal.signal(signal.SIGXFSZ, previous)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {out / 'model.pb'}: "), errors
    assert not out.exists()


# --- images: the work is checked before decoding --------------------------------------------------------------------

def _png_header_only(path: Path, width: int, height: int) -> Path:
    """A PNG whose header says `width` x `height` RGB and whose data is a few bytes: what a decompression bomb
    looks like to a reader that trusts the header."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))
    return path


def _dump_images(capsys: pytest.CaptureFixture[str], model: Path, folder: Path, out: Path, *extra: str) -> Outcome:
    return run_cli(capsys, "dump-bin", "-m", model, folder, "-o", out, *extra)


def test_a_decompression_bomb_is_refused_with_its_size(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A 50,000 x 50,000 PNG gave Pillow's DecompressionBombError traceback."""
    (tmp_path / "images").mkdir()
    image = _png_header_only(tmp_path / "images" / "bomb.png", 50_000, 50_000)
    outcome = _dump_images(capsys, frozen_small_cnn.path, tmp_path / "images", tmp_path / "out")
    assert outcome.code == 2 and "Traceback" not in outcome.err
    assert outcome.error_line.startswith(f"error: {image}: Image size (2500000000 pixels) exceeds limit")
    assert not (tmp_path / "out").exists()


def test_an_image_over_pillows_limit_is_refused_before_decoding(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "images").mkdir()
    image = _png_header_only(tmp_path / "images" / "big.png", 10_000, 10_000)
    outcome = _dump_images(capsys, frozen_small_cnn.path, tmp_path / "images", tmp_path / "out")
    _refused(outcome, f"{image}: 10000x10000 pixels (100,000,000), more than the 89,478,485 decoded at most")


def test_a_strip_whose_resize_would_take_gigabytes_is_refused(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A 1 x 1,000,000 PNG (4 kB, under Pillow's limit) resized to a shorter side of 16 was 16 x 16,000,000 before
    the crop: memory grew until the process was killed."""
    from PIL import Image

    (tmp_path / "images").mkdir()
    Image.new("L", (1_000_000, 1)).save(tmp_path / "images" / "strip.png")
    outcome = _dump_images(capsys, frozen_small_cnn.path, tmp_path / "images", tmp_path / "out", "--resize", "16")
    _refused(outcome, f"{tmp_path / 'images' / 'strip.png'}: 1000000x1 pixels, its shorter side resized to 16 makes "
                      "it 16000000x16 (256,000,000 pixels) before the crop, more than the 89,478,485 an image is "
                      "resized to at most")


def test_sixteen_bit_greyscale_is_refused_not_clipped(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Values 0..59,850 were clipped to 255 without a word: 99% of a sample became 1.0 after --scale 1/255."""
    from PIL import Image

    (tmp_path / "images").mkdir()
    values = np.linspace(0, 59_850, 64, dtype=np.uint16).reshape(8, 8)
    Image.fromarray(values, mode="I;16").save(tmp_path / "images" / "deep.png")
    outcome = _dump_images(capsys, frozen_small_cnn.path, tmp_path / "images", tmp_path / "out")
    assert outcome.code == 2
    assert "a 16-bit image (mode I;16); dump-bin reads 8-bit pixels and would clip its values to 255" in \
        outcome.error_line


def _jpeg_of_scans(path: Path, side: int, scans: int) -> Path:
    """A progressive greyscale JPEG of `side` x `side` pixels: one DC scan, then `scans` AC scans each coding every
    block as empty in a few end-of-band runs (under 100 bytes a scan, whatever the size). Decoding walks every block
    once per scan: thousands of them kept dump-bin busy past 300 s."""
    def segment(marker: int, data: bytes) -> bytes:
        return bytes([0xFF, marker]) + struct.pack(">H", len(data) + 2) + data

    def entropy(bits: str) -> bytes:
        bits += "1" * (-len(bits) % 8)
        return int(bits, 2).to_bytes(len(bits) // 8, "big").replace(b"\xff", b"\xff\x00")

    blocks = (-(-side // 8)) ** 2
    one_symbol = bytes([1] + [0] * 15)  # a Huffman table of one code, '0'
    data = (b"\xff\xd8" + segment(0xDB, bytes([0] + [1] * 64))
            + segment(0xC2, struct.pack(">BHHB", 8, side, side, 1) + bytes([1, 0x11, 0]))
            + segment(0xC4, bytes([0x10]) + one_symbol + bytes([0xE0]))  # AC: end of band, run 2**14 + 14 bits
            + segment(0xC4, bytes([0x00]) + one_symbol + bytes([0x00]))  # DC: no difference
            + segment(0xDA, bytes([1, 1, 0, 0, 0, 0])) + entropy("0" * blocks))
    ac_scan = segment(0xDA, bytes([1, 1, 0, 1, 63, 0])) + entropy(("0" + "1" * 14) * -(-blocks // 32767))
    path.write_bytes(data + ac_scan * scans + b"\xff\xd9")
    return path


def test_a_jpeg_of_thousands_of_scans_is_refused_before_decoding(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from infer.dump_bin._sources.jpeg_scans import MAX_SCANS

    (tmp_path / "images").mkdir()
    image = _jpeg_of_scans(tmp_path / "images" / "scans.jpg", 2000, MAX_SCANS)  # and the DC scan: one too many
    _refused(_dump_images(capsys, frozen_small_cnn.path, tmp_path / "images", tmp_path / "out"),
             f"{image}: a JPEG of more than {MAX_SCANS} scans, the most decoded (a decoder walks the whole image once "
             "per scan; a progressive photo has about 10)")
    assert not (tmp_path / "out").exists()
    _jpeg_of_scans(image, 2000, MAX_SCANS - 1)  # at the limit: decoded
    assert _dump_images(capsys, frozen_small_cnn.path, tmp_path / "images", tmp_path / "out").code == 0


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
def test_scans_are_counted_across_the_chunks_they_are_read_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              chunk: int) -> None:
    import io

    from PIL import Image

    from infer.dump_bin._sources import jpeg_scans

    monkeypatch.setattr(jpeg_scans, "_CHUNK", chunk)
    assert jpeg_scans.count_scans(_jpeg_of_scans(tmp_path / "a.jpg", 64, 37)) == 38
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), (1, 2, 3)).save(buffer, "JPEG", progressive=True)
    (tmp_path / "photo.jpg").write_bytes(buffer.getvalue())
    assert 2 <= jpeg_scans.count_scans(tmp_path / "photo.jpg") <= 20


# --- arrays: the header is checked against the file ------------------------------------------------------------------

def _npy_claiming(path: Path, shape: tuple[int, ...]) -> Path:
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        handle.write(b"\0" * 64)
    return path


@pytest.mark.parametrize("shape", [(10**9, 10**3), (2**40, 8), (1000, 1000)])
def test_an_npy_header_claiming_more_than_the_file_is_refused(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              shape: tuple[int, ...]) -> None:
    """It gave OverflowError, or numpy's `Unable to allocate 27.3 PiB` traceback."""
    npy = _npy_claiming(tmp_path / "data.npy", shape)
    outcome = run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, npy, "-o", tmp_path / "out")
    needed = int(np.prod(shape, dtype=object)) * 4
    _refused(outcome, f"{npy}: its header declares shape {shape} float32 ({needed:,} bytes), the file holds 64 bytes "
                      "after it")


def test_an_npy_header_no_array_can_have_is_refused(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    npy = _npy_claiming(tmp_path / "data.npy", (10**12, 10**12))
    _refused(run_cli(capsys, "dump-bin", "-m", frozen_small_cnn.path, npy, "-o", tmp_path / "out"),
             f"{npy}: its header declares shape (1000000000000, 1000000000000), which no array has (numpy sizes them "
             "in 64 bits)")


def test_labels_npy_with_an_absurd_header(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    labels = _npy_claiming(mine.root / "labels.npy", (10**15,))
    outcome = run_cli(capsys, *mine.compare("--labels", labels))
    _refused(outcome, f"{labels}: its header declares shape ({10**15},) float32 ({4 * 10**15:,} bytes), the file "
                      "holds 64 bytes after it")


def _peak_of(*args: str | Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """`infer ARGS` in a child that reports its own peak resident memory in bytes: VmHWM, which starts afresh with
    the program (ru_maxrss keeps the forking parent's across exec: this test process's, TensorFlow loaded)."""
    code = ("import re, runpy, sys\n"
            "sys.argv = ['infer', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('infer', run_name='__main__')\n"
            "finally:\n    kb = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
            "    print('peak', int(kb) * 1024, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=300,
                          check=False)
    return done, int(done.stderr.rsplit("peak ", 1)[1].split()[0])


def test_a_4_gib_npy_is_read_a_batch_at_a_time_or_refused_unread(frozen_small_cnn: ModelContract,
                                                                 tmp_path: Path) -> None:
    """A 4 GiB .npy peaked at 4.1-4.6 GiB: loaded whole before it was refused. Sparse here: refused for its shape,
    or streamed for four samples, the process stays far under the file's size."""
    def npy(name: str, shape: tuple[int, ...]) -> Path:
        header = {"descr": "<f4", "fortran_order": False, "shape": shape}
        with open(tmp_path / name, "wb") as handle:
            np.lib.format.write_array_header_1_0(handle, header)
            handle.truncate(handle.tell() + int(np.prod(shape)) * 4)
        return tmp_path / name

    flat = npy("flat.npy", (GiB,))
    refused, peak = _peak_of("dump-bin", "-m", frozen_small_cnn.path, flat, "-o", tmp_path / "o1")
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: {flat}: samples of shape ()"), \
        refused.stderr[-2000:]
    assert peak < 512 * 2**20, peak
    images = npy("images.npy", (4 * GiB // (8 * 8 * 3 * 4) + 1, 8, 8, 3))
    assert images.stat().st_size > 4 * GiB
    streamed, peak = _peak_of("dump-bin", "-m", frozen_small_cnn.path, images, "-o", tmp_path / "o2", "--samples", "4")
    assert streamed.returncode == 0, streamed.stderr[-2000:]
    assert peak < 512 * 2**20, peak


# --- documents: an unknown vocabulary is refused, not guessed ---------------------------------------------------------

def test_an_unknown_converted_target_is_refused_not_run_on_tensorflow(mine: World,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(mine.model.read_text())
    document["converted"]["target"] = "tpu"
    mine.model.write_text(json.dumps(document))
    _refused(run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", mine.root / "out"),
             f"{mine.model}: converted.target: expected one of om, onnx, found 'tpu'")
    assert not (mine.root / "out").exists()


# --- huge files, sparse: refused by their size before they are read ---------------------------------------------------

@pytest.mark.slow
def test_a_4_gib_pb_is_refused_unread(tmp_path: Path) -> None:
    pb = _sparse(tmp_path / "g.pb", 4 * GiB + 5, b"\x0a")
    done = _child("inspect", pb)
    assert done.returncode == 2 and f"error: {pb}: 4.0 GiB, larger than protobuf reads (2.0 GiB); not a frozen " \
                                   "GraphDef" in done.stderr


def test_a_4_gib_om_partition_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from atc_wrap.ascend_files.om_file import MODEL_DEF

    size = 4 * GiB
    table = struct.pack("<I4x", 1) + struct.pack("<I4xQQ", MODEL_DEF, 0, size)
    header = bytearray(256)
    struct.pack_into("<III", header, 0, 0x444F4D49, 256, 0x20000000)
    struct.pack_into("<I", header, 152, 2)
    struct.pack_into("<I", header, 156, 1)
    header[180] = 1
    struct.pack_into("<Q", header, 184, len(table) + size)
    om = _sparse(tmp_path / "big.om", 256 + len(table) + size, bytes(header) + table)
    outcome = run_cli(capsys, "inspect", om)
    _refused(outcome, f"{om}: partition MODEL_DEF holds {size:,} bytes, more than its reader parses "
                      f"({2**31 - 1:,})")


def test_a_1_gib_pipeline_file_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _sparse(tmp_path / "pipeline.toml", GiB, b"[model]\n")
    _refused(run_cli(capsys, "pipeline", "run", path),
             f"{path}: {GiB:,} bytes, more than a pipeline .toml file holds (at most {4 * 2**20:,})")


def test_a_keep_dtype_file_of_nul_bytes_is_refused_unread(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    """1 GiB of NUL bytes grew to 22.6 GiB: difflib's closest match over one 1 GiB name."""
    cfg = _sparse(mine.root / "k.cfg", GiB)
    outcome = run_cli(capsys, "convert", mine.model, "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                      "--keep-dtype", cfg)
    _refused(outcome, f"--keep-dtype {cfg}: {GiB:,} bytes, more than a keep_dtype file holds (at most "
                      f"{256 * 2**20:,})")
    cfg.write_bytes(b"\0" * 100)
    _refused(run_cli(capsys, "convert", mine.model, "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                     "--keep-dtype", cfg),
             f"--keep-dtype {cfg}: byte 0 is NUL: binary data, not a keep_dtype file (text)")


def test_a_long_name_gets_no_suggestion_and_is_quoted_short(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = mine.root / "k.cfg"
    cfg.write_text("n" * 4000 + "\n")
    outcome = run_cli(capsys, "convert", mine.model, "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                      "--keep-dtype", cfg)
    assert outcome.code == 2 and len(outcome.error_line) < 400, outcome.error_line
    assert outcome.error_line.startswith("error: --keep-dtype: op 'nnnnnnnn") and "(3940 more characters)" in \
        outcome.error_line


# --- errors never echo what a file holds --------------------------------------------------------------------------

def test_a_document_pointed_at_a_system_file_is_not_echoed(mine: World, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    secret = tmp_path / "shadow"
    line = "root:$6$Zk3v8sQ1$DJ3kLq0nV7bX9yR2tW5uA8cE1fH4iM6oP9sT2vY5zB8dG1jK4mN7pQ0rS3uV6xZ9:19000:0:99999:7:::"
    secret.write_text(line + "\n")
    for args in (("convert", mine.model, "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                  "--keep-dtype", secret),
                 ("convert", mine.model, "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                  "--customize-dtypes", secret),
                 (*mine.compare("--labels", secret),)):
        outcome = run_cli(capsys, *args)
        assert outcome.code == 2, args
        assert line[:61] not in outcome.err, outcome.err  # at most a short excerpt of the line


def test_a_100_kb_name_is_not_echoed_whole(small_cnn_prefix: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "freeze", small_cnn_prefix, "--outputs", "p" * 100_000, "-o", tmp_path / "out")
    assert outcome.code == 2 and len(outcome.error_line) < 1200, len(outcome.error_line)


# --- options: the absurd refused, the bound in the message -----------------------------------------------------------

@pytest.mark.parametrize(("extra", "expected"), [
    (("--timeout", "0"), "--timeout 0: expected seconds, a finite number more than 0"),
    (("--timeout", "-1"), "--timeout -1: expected seconds, a finite number more than 0"),
    (("--timeout", "nan"), "--timeout nan: expected seconds, a finite number more than 0"),
    (("--timeout", "inf"), "--timeout inf: expected seconds, a finite number more than 0"),
    (("--soc-version", ""), "--soc-version: an empty value; expected one (leave --soc-version out for its default)"),
    (("--input-format", "XYZ"), "--input-format 'XYZ': expected one of NHWC, NCHW, ND"),
    (("--dynamic-batch", ""), "--dynamic-batch: an empty value; expected one (leave --dynamic-batch out for its "
                              "default)"),
])
def test_convert_options_out_of_range(mine: World, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
                                      expected: str) -> None:
    before = mine.model.read_bytes()
    _refused(run_cli(capsys, "convert", mine.model, "--target", "onnx", *extra), expected)
    assert mine.model.read_bytes() == before


def test_a_gear_whose_buffers_exceed_memory_is_refused(small_cnn_prefix: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """--dynamic-batch 1,1000000000: buffers of 12 TiB for a model of 12 kB a sample."""
    from binio.memory import available_memory, format_bytes

    frozen = run_cli(capsys, "freeze", small_cnn_prefix, "--outputs", "probs", "--batch", "-1", "-o",
                     tmp_path / "model")
    assert frozen.code == 0, frozen.err
    outcome = run_cli(capsys, "convert", tmp_path / "model" / "model.json", "--target", "onnx", "--dynamic-batch",
                      "1,1000000000")
    available = available_memory()
    assert available is not None
    _refused(outcome, f"--dynamic-batch 1000000000: one batch of the inputs at this gear is "
                      f"{format_bytes(10**9 * 8 * 8 * 3 * 4)}, more than the {format_bytes(available)} of memory "
                      "available here")


def test_an_empty_report_folder_is_refused_not_the_current_one(world: World,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _refused(run_cli(capsys, *world.compare("--report", "")),
             "--report: an empty value; expected one (leave --report out for its default)")


def test_an_empty_work_dir_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pipeline.toml"
    path.write_text('[model]\nsource = "m.ckpt"\noutputs = ["probs"]\n[data]\nsource = "random:0"\n'
                    '[paths]\nwork_dir = ""\n')
    _refused(run_cli(capsys, "pipeline", "run", path), f"{path}: [paths] work_dir: an empty path; expected a file or "
                                                       "folder name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipeline.toml"]


def test_a_pipeline_refused_at_load_leaves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.pb").write_bytes(b"")
    path = tmp_path / "pipeline.toml"
    path.write_text('[model]\nsource = "g.pb"\noutputs = ["y"]\n[data]\nsource = "random:0"\n')
    outcome = run_cli(capsys, "pipeline", "run", path)
    assert outcome.code == 2 and f"{tmp_path / 'g.pb'}: an empty file (0 bytes)" in outcome.error_line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.pb", "pipeline.toml"]


@pytest.mark.parametrize("name", ["model.pb", "model.json"])
def test_force_never_replaces_a_link_out_of_the_model_folder(small_cnn_prefix: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str], name: str) -> None:
    (tmp_path / "model").mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (tmp_path / "model" / name).symlink_to(victim)
    outcome = run_cli(capsys, "freeze", small_cnn_prefix, "--outputs", "probs", "--batch", "1", "-o",
                      tmp_path / "model", "--force")
    _refused(outcome, f"{tmp_path / 'model' / name}: a link to {victim}, outside the output folder "
                      f"{tmp_path / 'model'}; --force never writes or deletes through it")
    assert victim.read_text() == "keep me" and (tmp_path / "model" / name).is_symlink()


def test_tune_force_never_replaces_a_keep_dtype_cfg_linked_out(mine: World, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tuned"
    out.mkdir()
    (out / "tune.json").write_text("{}")  # an earlier tune: --force would replace its keep_dtype.cfg
    victim = tmp_path / "victim.cfg"
    victim.write_text("keep me")
    (out / "keep_dtype.cfg").symlink_to(victim)
    outcome = run_cli(capsys, "tune-precision", mine.model, "--input", mine.bins, "-o", out, "--force")
    _refused(outcome, f"{out / 'keep_dtype.cfg'}: a link to {victim}, outside the output folder {out}; --force never "
                      "writes or deletes through it")
    assert victim.read_text() == "keep me" and (out / "keep_dtype.cfg").is_symlink()


@pytest.mark.parametrize(("extra", "expected"), [
    (("--workers", "300"), "--workers 300: expected at most {most} ({why})"),
    (("--resize", "100000"), "--resize 100000: expected at most 9459 (the shorter side in pixels: a square image "
                             "resized to it is already Pillow's limit of pixels)"),
    (("--std", "-1"), "--std -1: expected numbers more than 0 (a standard deviation), one or one per channel"),
    (("--scale", "nan"), "--scale nan: expected a finite number other than 0 (1/255 is 0.00392)"),
    (("--mean", "1,inf,2"), "--mean 1,inf,2: expected finite numbers, one or one per channel"),
])
def test_dump_bin_counts_out_of_range(frozen_small_cnn: ModelContract, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
                                      expected: str) -> None:
    from binio.limits import most_workers

    most, why = most_workers()
    _refused(run_cli(capsys, "dump-bin", "random:0", "-m", frozen_small_cnn.path, "-o", tmp_path / "out", *extra),
             expected.format(most=most, why=why))
    assert not (tmp_path / "out").exists()


def test_compare_workers_past_the_machine(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    from binio.limits import most_workers

    most, why = most_workers()
    _refused(run_cli(capsys, *world.compare("--workers", str(most + 1))),
             f"--workers {most + 1}: expected at most {most} ({why})")


def test_a_symlink_loop_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], mine: World) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    outcome = run_cli(capsys, "convert", mine.model, "--target", "onnx", "--precision-mode", "allow_fp32_to_fp16",
                      "--keep-dtype", loop)
    assert outcome.code == 2 and str(loop) in outcome.error_line and "Traceback" not in outcome.err
    assert os.path.islink(loop)


def test_a_symlink_loop_given_as_a_model_is_named_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "model.pb"
    loop.symlink_to(tmp_path / "other.pb")
    (tmp_path / "other.pb").symlink_to(loop)
    _refused(run_cli(capsys, "inspect", loop), f"{loop}: a symbolic link that leads nowhere (a loop, or its target is "
                                               "missing)")


def test_dump_bin_never_writes_through_a_link_to_outside(frozen_small_cnn: ModelContract, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A pipeline's work/bins linked to a folder outside: dump-bin replaced its dataset.json and wrote its bins."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "dataset.json").write_text('{"theirs": 1}')
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "bins").symlink_to(outside)
    outcome = run_cli(capsys, "dump-bin", "random:0", "-m", frozen_small_cnn.path, "-o", tmp_path / "work" / "bins",
                      "--force")
    _refused(outcome, f"{tmp_path / 'work' / 'bins'}: a link to {outside}, outside the output folder "
                      f"{tmp_path / 'work'}; --force never writes or deletes through it")
    assert sorted(p.name for p in outside.iterdir()) == ["dataset.json"]
    assert (outside / "dataset.json").read_text() == '{"theirs": 1}'


def test_a_generator_asked_for_more_samples_than_the_disk_holds_is_refused(frozen_small_cnn: ModelContract,
                                                                         tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """random:0 with --samples 10**20 planned 5 * 10**19 batches (and never wrote one): it ran for ever."""
    outcome = run_cli(capsys, "dump-bin", "random:0", "-m", frozen_small_cnn.path, "-o", tmp_path / "out",
                      "--samples", "99999999999999999999")
    assert outcome.code == 2
    assert outcome.error_line.startswith("error: --samples 99999999999999999999: 50,000,000,000,000,000,000 batch "
                                         "files of 1.5 KiB are ")
    assert not (tmp_path / "out").exists()


def test_a_node_defined_twice_is_refused_by_run_and_inspect(mine: World, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by the battery's mutants: `run -b tf` on such a pb ended in TensorFlow's ValueError traceback."""
    from tensorflow.core.framework import graph_pb2

    from binio.binfile import sha256_file

    pb = mine.model.parent / "model.pb"
    graph_def = graph_pb2.GraphDef.FromString(pb.read_bytes())
    graph_def.node.append(type(graph_def.node[-1]).FromString(graph_def.node[-1].SerializeToString()))
    pb.write_bytes(graph_def.SerializeToString())
    document = json.loads(mine.model.read_text())
    document["frozen"]["sha256"] = sha256_file(pb)
    document.pop("converted")
    mine.model.write_text(json.dumps(document))
    said = f"{pb}: node '{graph_def.node[-1].name}' is defined twice"
    _refused(run_cli(capsys, "run", mine.model, "--input", mine.bins, "-o", mine.root / "out", "-b", "tf"), said)
    _refused(run_cli(capsys, "inspect", pb), said)


def test_a_1_gib_pipeline_state_file_is_not_read(tmp_path: Path) -> None:
    """A state file infer did not write means: run every stage again. One of 1 GiB was read whole first."""
    import tracemalloc

    from infer.pipeline._state import STATE_FILE, load_state

    _sparse(tmp_path / STATE_FILE, GiB, b'{"schema": "infer.pipeline-state", "stages": {')
    tracemalloc.start()
    try:
        assert load_state(tmp_path) == {}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak

"""Fetches the real Ascend files the tests hold infer to, from their public commits, into one folder.

    python scripts/fetch_ascend_fixtures.py FOLDER
    INFER_ASCEND_FIXTURES=FOLDER python -m pytest tests/atc_wrap/test_ascend_real_files.py tests/infer/om ...

Nothing here is committed to this repository: the files are Huawei's and their contributors', fetched from GitHub
at the commits below (raw.githubusercontent.com) and checked against the size and sha256 recorded here. Each is
written under the name the tests look for (`FIXTURES`); a file already there with the right digest is kept. The
tests that need them skip where INFER_ASCEND_FIXTURES is not set.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

_TIMEOUT = 120


@dataclass(frozen=True)
class Fixture:
    """One public file: where it is (repository, commit, path), what it is, and its size and digest there."""

    name: str  # the name the tests read it by
    repository: str
    commit: str
    path: str
    size: int
    sha256: str
    what: str

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{urllib.parse.quote(self.path)}"


_MODELZOO_TF = ("Ascend/ModelZoo-TensorFlow", "a2c3332a6cea24b56ab936a746b994c89c8fc7f8",
                "ACL_TensorFlow/contrib/cv/")
_A3C = "contrib/Research/reinforcement-learning/A3C/A3C_tf_ HGX_2018302398/"
FIXTURES: tuple[Fixture, ...] = (
    Fixture("hh_om.om", _MODELZOO_TF[0], _MODELZOO_TF[1], _MODELZOO_TF[2] + "AutoEncoder_ID2495_for_ACL/hh_om.om",
            618993, "f3c15ae90fccccec497b2ea46c3f913dc3ef88ebe66c5ca8f7279d801a79829e",
            "the AutoEncoder's om: ATC 1.80, Ascend310, header 0x20000000"),
    Fixture("hh.pb", _MODELZOO_TF[0], _MODELZOO_TF[1], _MODELZOO_TF[2] + "AutoEncoder_ID2495_for_ACL/hh.pb",
            495353, "7fa7ef68ee919b0083dabea6710c659dca7809dac3a43799a3282b72ec7bf113", "its frozen pb"),
    Fixture("hh.bin", _MODELZOO_TF[0], _MODELZOO_TF[1],
            _MODELZOO_TF[2] + "AutoEncoder_ID2495_for_ACL/scripts/input_bins/hh.bin",
            313600, "496da3ab5d736caefa1771165831b48b28e0f11749ef046bb18b84f88007c4f8", "its input bin"),
    Fixture("hh_output0.bin", _MODELZOO_TF[0], _MODELZOO_TF[1],
            _MODELZOO_TF[2] + "AutoEncoder_ID2495_for_ACL/scripts/results/VAE/hh_output0.bin",
            313600, "140e8898174f1305b0ae2115a5b2f88982d1bb6ee59db54dd555c1e39e1ee2aa",
            "its output, as the repository's ACL benchmark wrote it on an NPU"),
    Fixture("ddnet_out.om", _MODELZOO_TF[0], _MODELZOO_TF[1], _MODELZOO_TF[2] + "DD-NET_ID1088_for_TensorFlow/out.om",
            4112752, "b3029d86ea6a7bb4bb46dc9fa75b2e0f43d81b0a13f129c2a67aa9695441757b",
            "DD-NET's om (out.om in the repository): ATC 1.75, the older header 0x10000000"),
    Fixture("ddnet_X0.bin", _MODELZOO_TF[0], _MODELZOO_TF[1],
            _MODELZOO_TF[2] + "DD-NET_ID1088_for_TensorFlow/test/X0.bin",
            27008, "5b0f6f7e42e0500bbebd774cdccad9134afb33d746d028e363a58f353f7a3245", "its first input"),
    Fixture("ddnet_X1.bin", _MODELZOO_TF[0], _MODELZOO_TF[1],
            _MODELZOO_TF[2] + "DD-NET_ID1088_for_TensorFlow/test/X1.bin",
            7808, "6f2d9baecc584b8a9984e7abf702a9f21aea62901891ba3172a598c50997ed75", "its second input"),
    Fixture("a3c_7761bb2.om", "Ascend/modelzoo", "7761bb22b50934e1179b516af8eab7ed5ce4f341",
            _A3C + "om_model/a3c_pong_model.om", 377283,
            "f51e589ba6afcd8fafb44da5c64a40da39d2906dbefca4af8e4d2b9dbfd872d4",
            "the A3C Pong model's first om (2021-01-24; no ATC version recorded, the README of the day names CANN "
            "20.1): its int32 ArgMax output cast to float32 (trans_Cast_32)"),
    Fixture("a3c_c735fee.om", "Ascend/modelzoo", "c735fee9ca2760c3642079ebf4aa45134b296063",
            _A3C + "om_model/a3c_pong_model.om", 378955,
            "e7865105259e87cb21993073b4764560b69ce29cbfcfe6d7211c5f331aba62d5",
            "the same model's om of the next day: ATC 1.75.22.0.220, the ArgMax output left int32"),
    Fixture("a3c_pong_model.pb", "Ascend/modelzoo", "848488ffaa883135bc0f2b971fed09b095811658",
            _A3C + "pb_model/a3c_pong_model.pb", 610541,
            "a89d5b8208df2039c7c94c6cd62bdb420c1935eecb0838527db406e5d204f58f", "the frozen pb both were made from"),
    Fixture("msaicerr_dump_data_pb2.py", "Ascend/tools", "9d6da90fd0d3e5d232676c7a4527f7d92ac70e5c",
            "msaicerr/ms_interface/dump_data_pb2.py", 49544,
            "187a8d6ddfa90e7d470197d1454ed417b5b69c2112b36d049eb6435bbe46ef53",
            "Huawei's newest public DumpData definition (generated protobuf code): the tests read its serialized "
            "descriptor, never run it"),
)


def fixture(name: str) -> Fixture:
    """The fixture of that name; an unknown name is a mistake in the test that asks."""
    for item in FIXTURES:
        if item.name == name:
            return item
    raise KeyError(f"{name}: no such fixture; scripts/fetch_ascend_fixtures.py lists "
                   f"{', '.join(item.name for item in FIXTURES)}")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _holds(path: Path, item: Fixture) -> bool:
    return path.is_file() and path.stat().st_size == item.size and _digest(path.read_bytes()) == item.sha256


def fetch(item: Fixture, folder: Path) -> str:
    """Writes `item` into `folder` (a temporary name, then renamed) unless it is there already; what was done."""
    target = folder / item.name
    if _holds(target, item):
        return f"{target}: present"
    with urllib.request.urlopen(item.url, timeout=_TIMEOUT) as response:
        data = response.read()
    if len(data) != item.size or _digest(data) != item.sha256:
        raise SystemExit(f"{item.url}: expected {item.size} bytes with sha256 {item.sha256}, got "
                         f"{len(data)} bytes with sha256 {_digest(data)}")
    partial = target.with_name(f".{target.name}.part")
    partial.write_bytes(data)
    os.replace(partial, target)
    return f"{target}: {len(data)} bytes from {item.repository}@{item.commit[:9]}:{item.path}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="where to write them (created; INFER_ASCEND_FIXTURES for the tests)")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    for item in FIXTURES:
        print(fetch(item, args.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A host without rsync (nor python3 on its login's PATH: files are linked by the shell loop): files go by sftp
(sshd's own subsystem), each under a temporary name renamed once whole. The same run as over rsync, the same bytes;
a second run sends nothing; a file name with shell and sftp metacharacters (quotes, globs) arrives as it is."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from infer.contract import load_contract
from infer.convert import ConvertOptions, convert_model
from infer.run import RunOptions, run_model
from tests.builders.bins import write_dataset
from tests.builders.frozen import freeze_by_hand
from tests.infer.remote.sshd import SshServer, start_sshd, why_no_sshd
from tests.infer.run_data import cnn_batches
from tests.models import build_small_cnn

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def no_rsync(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """An sshd whose login PATH has every tool of this machine but rsync and python (the env script puts the
    fakes' python first, for the fakes alone)."""
    missing = why_no_sshd()
    if missing:
        if os.environ.get("INFER_TESTS_NEED_SSHD") == "1":
            pytest.fail(f"INFER_TESTS_NEED_SSHD=1 but {missing}")
        pytest.skip(missing)
    tools = tmp_path_factory.mktemp("tools")
    for folder in (Path("/usr/local/bin"), Path("/usr/bin"), Path("/bin")):
        for tool in folder.iterdir() if folder.is_dir() else ():
            if tool.name != "rsync" and not tool.name.startswith("python") and not (tools / tool.name).exists():
                (tools / tool.name).symlink_to(tool)
    server = start_sshd(tmp_path_factory.mktemp("sshd"), remote_path=f"{{home}}/bin:{tools}")
    try:
        yield server
    finally:
        server.stop()


def test_without_rsync_on_the_host_files_go_by_sftp(no_rsync: SshServer, tmp_path: Path) -> None:
    frozen = freeze_by_hand(build_small_cnn(tmp_path / "ckpt"), tmp_path / "model")
    weird = tmp_path / "model" / "a b'\"*?[x]$(touch pwned).om"
    converted = convert_model(load_contract(frozen.path), ConvertOptions(remote=no_rsync.options(), output=weird,
                                                                         precision_mode="force_fp32")).contract
    assert converted.converted is not None and converted.converted.settings["remote"]["transfer"] == "sftp"
    assert weird.is_file()
    bins = write_dataset(tmp_path / "bins", {"images:0": cnn_batches(3)}).root
    first = run_model(converted, bins, tmp_path / "out", RunOptions(remote=no_rsync.options()))
    second = run_model(converted, bins, tmp_path / "out", RunOptions(remote=no_rsync.options()))
    assert first.record.remote is not None and second.record.remote is not None
    assert first.record.remote.transfer == "sftp" and first.record.remote.traffic.sent_files == 3
    assert second.record.remote.traffic.sent_files == 0 and second.record.remote.traffic.kept_files == 4
    outputs = sorted(first.folder.glob("*_output_*.bin"))
    assert len(outputs) == 3
    assert [p.read_bytes() for p in outputs] == [(second.folder / p.name).read_bytes() for p in outputs]
    assert not list(first.folder.rglob("*.infer-part"))  # every file renamed once whole
    assert [p for folder in (no_rsync.home, tmp_path) for p in folder.rglob("pwned*")] == []

"""The SSH server the remote tests reach: one per test module (a real sshd on 127.0.0.1, tests/infer/remote/sshd.py),
skipped with the reason where none can be started; INFER_TESTS_NEED_SSHD=1 (CI, which installs openssh-server)
makes that a failure instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infer.remote.sshd import SshServer, start_sshd, why_no_sshd


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    missing = why_no_sshd() or ("" if shutil.which("rsync") else "no rsync on PATH (these tests send files with it; "
                                                                 "tests/infer/remote/test_over_sftp.py without)")
    if missing:
        if os.environ.get("INFER_TESTS_NEED_SSHD") == "1":
            pytest.fail(f"INFER_TESTS_NEED_SSHD=1 but {missing}")
        pytest.skip(missing)
    server = start_sshd(Path(tmp_path_factory.mktemp("sshd")))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_env(sshd: SshServer) -> Iterator[SshServer]:
    """The server with its env script's extra lines cleared before and after the test."""
    sshd.fake_env("")
    yield sshd
    sshd.fake_env("")

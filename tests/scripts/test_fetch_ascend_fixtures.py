"""scripts/fetch_ascend_fixtures.py: the one list of the real files the tests read, with their public commits,
sizes and digests; a folder it filled holds exactly those bytes under the names the tests ask for."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from scripts.fetch_ascend_fixtures import FIXTURES, fetch, fixture
from tests.real_files import FOLDER

ROOT = Path(__file__).resolve().parents[2]


def test_every_fixture_is_pinned_to_a_full_commit_size_and_digest() -> None:
    names = [item.name for item in FIXTURES]
    assert len(names) == len(set(names))
    for item in FIXTURES:
        assert re.fullmatch(r"[0-9a-f]{40}", item.commit) and re.fullmatch(r"[0-9a-f]{64}", item.sha256)
        assert item.size > 0 and item.url.startswith(f"https://raw.githubusercontent.com/{item.repository}/")
    assert "%20" in fixture("a3c_pong_model.pb").url  # the A3C folder's name has a space


def test_every_name_a_test_reads_is_one_the_script_writes() -> None:
    asked = set()
    for path in (ROOT / "tests").rglob("*.py"):
        asked.update(re.findall(r"(?:real_file|needs_real_files)\(([^)]*)\)", path.read_text()))
    names = {name for call in asked for name in re.findall(r'"([^"]+)"', call)}
    assert names and names <= {item.name for item in FIXTURES}
    with pytest.raises(KeyError, match=r"out\.om: no such fixture"):
        fixture("out.om")  # DD-NET's name in its commit: the script writes it as ddnet_out.om


@pytest.mark.skipif(FOLDER is None, reason="INFER_ASCEND_FIXTURES is not set")
def test_a_fetched_folder_holds_the_listed_bytes_and_is_not_fetched_again(tmp_path: Path) -> None:
    assert FOLDER is not None
    present = [item for item in FIXTURES if (FOLDER / item.name).is_file()]
    for item in present:
        data = (FOLDER / item.name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (item.size, item.sha256), item.name
        shutil.copyfile(FOLDER / item.name, tmp_path / item.name)
        assert fetch(item, tmp_path) == f"{tmp_path / item.name}: present"  # no network asked for

"""The real Ascend files of scripts/fetch_ascend_fixtures.py, in the folder INFER_ASCEND_FIXTURES names.

Tests ask for a file by the name that script writes it under (`real_file`), so a test and the fetched folder
cannot disagree on a name: a name the script does not list fails the test that asks; a listed file missing from
the folder (or no folder) skips it, with the command that fetches them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts.fetch_ascend_fixtures import fixture

ENVIRONMENT = "INFER_ASCEND_FIXTURES"
FOLDER = Path(os.environ[ENVIRONMENT]) if os.environ.get(ENVIRONMENT) else None
_HOW = f"python scripts/fetch_ascend_fixtures.py FOLDER, then {ENVIRONMENT}=FOLDER"


def has_real_files(*names: str) -> bool:
    for name in names:
        fixture(name)  # a name the script does not write is the test's mistake
    return FOLDER is not None and all((FOLDER / name).is_file() for name in names)


def needs_real_files(*names: str) -> pytest.MarkDecorator:
    """A skip mark for tests that read these files, where the folder does not hold them."""
    return pytest.mark.skipif(not has_real_files(*names),
                              reason=f"{ENVIRONMENT} does not name a folder holding {', '.join(names)} ({_HOW})")


def real_file(name: str) -> Path:
    """The path of the fetched file `name`; skips the test where it is not there."""
    if not has_real_files(name):
        pytest.skip(f"{ENVIRONMENT} does not name a folder holding {name} ({_HOW})")
    assert FOLDER is not None
    return FOLDER / name

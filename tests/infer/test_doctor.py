"""`infer doctor` against fake CANN toolkits built in tmp folders: tools found or not, versions, environment."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from infer.doctor._doctor import diagnose
from infer.doctor._versions import version_in_range
from tests.cli import run_cli


def _executable(path: Path, text: str = "#!/bin/sh\necho fake\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def bare_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Ascend tool anywhere: PATH holds only an empty folder, no CANN variables."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/lib")
    return empty


@pytest.fixture
def ascend_machine(bare_machine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CANN layout: ascend-toolkit/{set_env.sh, latest/compiler/bin/atc, latest/compiler/version.info}, msame
    on PATH, ais_bench importable, the devlib entry in LD_LIBRARY_PATH. ATC is NOT on PATH: found via the home."""
    toolkit = tmp_path / "Ascend" / "ascend-toolkit"
    home = toolkit / "latest"
    _executable(home / "compiler" / "bin" / "atc")
    (home / "compiler" / "version.info").write_text("Version=7.0.0.alpha003\n")
    (toolkit / "set_env.sh").write_text("export ASCEND_TOOLKIT_HOME=...\n")
    _executable(bare_machine / "msame")
    module_root = tmp_path / "site"
    (module_root / "ais_bench").mkdir(parents=True)
    (module_root / "ais_bench" / "__init__.py").write_text("")
    (module_root / "ais_bench" / "__main__.py").write_text("")
    monkeypatch.syspath_prepend(str(module_root))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(home))
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{home}/lib64:{home}/x86_64-linux/devlib:/usr/lib")
    return home


@pytest.mark.parametrize(
    ("version", "specifier", "expected"),
    [
        ("2.21.0", ">=2.16,<2.22", True),
        ("2.22.0", ">=2.16,<2.22", False),
        ("2.15.1", ">=2.16,<2.22", False),
        ("2.16", ">=2.16,<2.22", True),
        ("2.22.0rc1", "<2.22", False),
        ("1.17.0", "<1.18,>=1.16", True),
        ("3.10.14", ">=3.10", True),
        ("3.9.18", ">=3.10", False),
        ("1.2.3", "==1.2.3", True),
        ("1.2.3", "!=1.2.3", False),
    ],
)
def test_version_in_range(version: str, specifier: str, expected: bool) -> None:
    assert version_in_range(version, specifier) is expected


def test_packages_report_installed_versions_and_declared_ranges(bare_machine: Path) -> None:
    import importlib.metadata

    report = diagnose()
    onnx = report.package("onnx")
    assert onnx.version == importlib.metadata.version("onnx")
    assert onnx.tested_range == ">=1.16,<1.24"  # from infer's own metadata, i.e. pyproject.toml
    assert report.package("tensorflow").distribution in ("tensorflow-cpu", "tensorflow")
    assert report.package("tensorflow").tested_range == ">=2.16,<2.22"
    assert report.package("xxhash").tested_range == ">=3.4,<5"  # the bins' digests
    assert report.tested_combination  # this environment was installed from those very ranges


def test_a_package_outside_its_range_is_not_a_tested_combination(bare_machine: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from dataclasses import replace

    import infer.doctor._doctor

    report = diagnose()
    newer = tuple(replace(p, version="1.99.0") if p.name == "onnx" else p for p in report.packages)
    untested = replace(report, packages=newer)
    assert not untested.tested_combination and untested.package("onnx").in_range is False
    monkeypatch.setattr(infer.doctor._doctor, "diagnose", lambda: untested)
    lines = run_cli(capsys, "doctor").out.splitlines()
    assert "  !! onnx         1.99.0 (tested >=1.16,<1.24)" in lines
    assert "  NOT a tested combination: onnx outside the tested ranges or missing" in lines


def test_bare_machine_finds_no_tool_and_plans_the_stand_in(bare_machine: Path) -> None:
    report = diagnose()
    assert [t.found for t in report.tools] == [False, False, False]
    assert report.toolkit_home == "" and report.set_env == "" and report.devlib == ""
    plans = {s.stage: s for s in report.stages}
    assert not plans["convert"].real and "tf2onnx" in plans["convert"].uses
    assert not plans["run"].real and plans["run"].uses == "ONNX Runtime"
    assert plans["compare"].real


def test_ascend_machine_finds_atc_under_the_toolkit_home(ascend_machine: Path) -> None:
    report = diagnose()
    atc = report.tool("atc")
    assert atc.path == str(ascend_machine / "compiler" / "bin" / "atc")
    assert atc.version == "7.0.0.alpha003"
    assert report.tool("msame").found
    assert report.tool("ais_bench").found
    assert report.toolkit_home_exists
    assert report.set_env == str((ascend_machine.parent / "set_env.sh").resolve())
    assert report.devlib == f"{ascend_machine}/x86_64-linux/devlib"
    plans = {s.stage: s for s in report.stages}
    assert plans["convert"].real and plans["convert"].uses == "ATC (pb -> om)"
    assert plans["run"].real and plans["run"].uses == "msame on the NPU"


def test_unwritable_temp_folder_is_reported(bare_machine: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    report = diagnose(temp_dir=missing)
    assert not report.temp_writable
    assert "No such file" in report.temp_error


def test_cli_prints_tools_environment_and_the_plan(ascend_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "doctor")
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert f"  ok atc          {ascend_machine}/compiler/bin/atc 7.0.0.alpha003  " \
           f"(version from {ascend_machine}/compiler/version.info)" in lines
    assert f"  ok LD_LIBRARY_PATH devlib  {ascend_machine}/x86_64-linux/devlib" in lines
    assert "  real      convert         ATC (pb -> om)" in lines
    assert lines[-6] == "what will run here"


def test_cli_on_a_bare_machine_says_what_uses_the_stand_in(bare_machine: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_cli(capsys, "doctor")
    assert outcome.code == 0, outcome.err
    lines = outcome.out.splitlines()
    assert "  -- atc          not found (not on PATH)" in lines
    assert "  stand-in  convert         tf2onnx -> ONNX, ATC's precision mode emulated" in lines
    assert "  stand-in  run             ONNX Runtime" in lines


def test_cli_json(bare_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    outcome = run_cli(capsys, "doctor", "--json")
    document = json.loads(outcome.out)
    assert [t["name"] for t in document["tools"]] == ["atc", "msame", "ais_bench"]
    assert document["stages"][1] == {"stage": "convert", "real": False,
                                     "uses": "tf2onnx -> ONNX, ATC's precision mode emulated"}


@pytest.mark.slow
def test_doctor_imports_no_framework() -> None:
    code = ("import sys; from infer.doctor._doctor import diagnose; diagnose(); "
            "heavy = [m for m in ('tensorflow', 'onnx', 'onnxruntime', 'tf2onnx') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_atc_without_its_environment_is_flagged(bare_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _executable(bare_machine / "atc")
    outcome = run_cli(capsys, "doctor")
    lines = outcome.out.splitlines()
    assert f"  ok atc          {bare_machine / 'atc'}  (no version file found beside it)" in lines
    assert "  !! ASCEND_TOOLKIT_HOME     not set" in lines
    assert "  !! LD_LIBRARY_PATH devlib  no devlib entry" in lines
    assert "  real      convert         ATC (pb -> om)" in lines


def test_the_operator_tables_age_and_chips_are_reported(bare_machine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from atc_wrap.precision.op_tables import load_op_table

    date = load_op_table("ascend310").date
    lines = run_cli(capsys, "doctor").out.splitlines()
    start = lines.index("operator tables (convert's pre-check and precision plan)")
    assert lines[start + 1].startswith(f"  ok snapshot of {date}  (github.com/dengguojie/vue-element-admin@")
    assert "     ascend310p  Ascend310P1, Ascend310P3, Ascend310P5, Ascend310P7" in lines
    assert any(line.startswith("  -- no table     Ascend910_9391") for line in lines)
    assert "     the stand-in assumes Ascend310 without --soc-version" in lines
    tables = json.loads(run_cli(capsys, "doctor", "--json").out)["op_tables"]
    assert tables["date"] == date and tables["families"]["ascend910b"][0] == "Ascend910B"
    assert tables["assumed"] == "Ascend310" and tables["error"] == ""


def _as_a_sample(text: str) -> list[str]:
    """Lines with what differs between machines made alike: installed versions (three-part; the tested ranges
    stay), paths, the platform."""
    text = re.sub(r"\b\d+\.\d+\.\d+\S*", "V", text)
    text = re.sub(r"(?<![\w>=<])/[^\s)]+", "PATH", text)
    text = re.sub(r"\[(Linux|Darwin|Windows)[^\]]*\]", "[PLATFORM]", text)
    return [line.rstrip() for line in text.splitlines()]


def test_the_guides_doctor_sample_is_what_doctor_prints(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/doctor.md shows the whole output, as this machine's doctor prints it: a line added, dropped or
    reworded in the command fails here until the page is regenerated."""
    for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(name, raising=False)
    page = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text()
    sample = page.split("```\ninfer ", 1)[1].split("```", 1)[0]
    outcome = run_cli(capsys, "doctor")
    assert outcome.code == 0, outcome.err
    assert _as_a_sample("infer " + sample) == _as_a_sample(outcome.out)

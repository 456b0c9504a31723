"""docs/options.md is what the options classes declare: written from them, so it cannot drift from the flags, the
pipeline keys, the defaults or the help the commands show."""

from __future__ import annotations

from pathlib import Path

from infer._option_docs import render

ROOT = Path(__file__).resolve().parents[1]


def test_the_options_page_is_the_one_the_options_classes_write() -> None:
    assert (ROOT / "docs" / "options.md").read_text(encoding="utf-8") == render(), (
        "docs/options.md is stale: python -m infer._option_docs docs/options.md")


def test_the_page_lists_every_stage_and_a_flag_of_each() -> None:
    text = render()
    for stage, flag in (("freeze", "--batch"), ("convert", "--timeout"), ("dump-bin", "--samples"),
                        ("bin-info", "--verify"), ("run", "--devices"), ("compare", "--atol"),
                        ("tune-precision", "--max-ops")):
        section = text.split(f"## infer {stage}", 1)[1].split("\n## ", 1)[0]
        assert f"`{flag}`" in section, (stage, flag)
    assert "| `--timeout` | `[convert] timeout` | 3600.0 |" in text

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


def test_a_flag_that_only_turns_an_option_off_says_so_in_its_help() -> None:
    """--no-verify shares its help with the key verify = true: the text must read right for both, so it names the
    flag as what turns the option off (freeze's once read "Run original and frozen graph side by side", the opposite
    of what --no-verify does)."""
    from infer._option_docs import STAGES, _load
    from infer._option_fields import flagged

    checked = 0
    for _, _, classes in STAGES:
        for where in classes:
            for flag in flagged(_load(where)):
                spelling = flag.setting
                if spelling.flag is None and spelling.negative is not None:
                    assert f"{spelling.negative} " in spelling.help and "skips" in spelling.help, spelling.negative
                    checked += 1
    assert checked >= 1

"""Version numbers against a pip specifier (``>=2.16,<2.22``), as far as doctor needs: release numbers compared
part by part, pre-releases by their release."""

from __future__ import annotations

import re


def _release(version: str) -> tuple[int, ...]:
    """``2.21.0rc1`` -> (2, 21, 0): the numeric release part, enough to compare against our ranges."""
    parts: list[int] = []
    for piece in version.split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
        if match.end() < len(piece):
            break
    return tuple(parts)


def _compare(left: tuple[int, ...], right: tuple[int, ...]) -> int:
    width = max(len(left), len(right))
    a, b = left + (0,) * (width - len(left)), right + (0,) * (width - len(right))
    return (a > b) - (a < b)


def version_in_range(version: str, specifier: str) -> bool:
    """Whether `version` satisfies a comma-separated specifier of >=, >, <=, <, ==, != clauses."""
    have = _release(version)
    checks = {">=": lambda c: c >= 0, ">": lambda c: c > 0, "<=": lambda c: c <= 0, "<": lambda c: c < 0,
              "==": lambda c: c == 0, "!=": lambda c: c != 0}
    for clause in filter(None, (c.strip() for c in specifier.split(","))):
        match = re.match(r"(>=|<=|==|!=|>|<)\s*([\w.*]+)$", clause)
        if not match:
            continue  # a clause this small parser does not know (~=, ===) does not decide the answer
        operator, bound = match.groups()
        if not checks[operator](_compare(have, _release(bound.replace(".*", "")))):
            return False
    return True

"""What `infer inspect` is asked (`InspectOptions`): the one declaration of its flags. How many rows a table shows
(--top) and JSON on stdout (--json) are the command line's own: they change what is printed, not what is read.
Standard library only: `infer inspect --help` builds its flags from it."""

from __future__ import annotations

from dataclasses import dataclass

from infer._option_fields import setting


@dataclass(frozen=True)
class InspectOptions:
    precision: bool = setting(False, toml=False, help="MODEL is a converted model.json: print its precision plan "
                                                      "(each op's dtype on the chip, and why).")

"""What `infer freeze` is asked (`FreezeOptions`): the one declaration of its flags and of the pipeline's [model]
keys. Standard library only: `infer freeze --help` builds its flags from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from binio.errors import InferError
from binio.limits import MAX_DIM
from binio.texts import comma_items, top_level_items
from ckpt2pb.errors import FreezeError
from infer._option_fields import allow_host_ops_setting, setting, type_name


def _assignments(texts: list[str], flag: str) -> dict[str, str]:
    """``--set is_training=false`` (repeatable) -> {"is_training": "false"}."""
    found: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InferError(f"{flag} {text!r}: expected NAME=VALUE (e.g. is_training=false)")
        found[name.strip()] = value.strip()
    return found


def _set_key(value: Any, where: str) -> dict[str, str]:
    """``set = { is_training = false }``: TOML booleans and numbers are fine here; freeze takes text."""
    if not isinstance(value, dict):
        raise InferError(f"{where}: expected a table of name = value, got {type_name(value)} {value!r}")
    folded: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, (bool, int, float, str)):
            folded[str(name)] = _as_text(item)
        else:
            raise InferError(f"{where}.{name}: expected a boolean, number or string, got {type_name(item)}")
    return folded


def _as_text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class FreezeOptions:
    """In pipeline.toml: [model], beside the source."""

    outputs: tuple[str, ...] = setting((), parse=comma_items, help="Output tensors or nodes, comma-separated: "
                                                                   "probs:0,logits (ATC's --out_nodes).")
    inputs: tuple[str, ...] = setting((), parse=top_level_items, shown="the placeholders the outputs need",
                                      help="Inputs as NAME[DIMS]:DTYPE, comma-separated, shape and dtype optional: "
                                           "'IteratorGetNext:0[?,224,224,3]:float32,is_training'. A tensor that is "
                                           "not a placeholder is replaced by one.")
    batch: int | None = setting(None, shown="the graph's", help="Fix an unknown first dim of every input to N; -1 "
                                                                "keeps it unknown, for infer convert "
                                                                "--dynamic-batch.")
    assignments: dict[str, str] = setting(default_factory=dict, toml="set", flag="--set", repeat=True,
                                          parse=_assignments, decode=_set_key,
                                          help="Fix a placeholder to a value: --set is_training=false "
                                               "(repeatable; set = { is_training = false } in pipeline.toml). "
                                               "Placeholders with a default are folded to it otherwise.")
    force: bool = setting(False, toml=False, help="Overwrite an existing model.pb/model.json.")
    # One text for the key (verify = true) and the flag (--no-verify): it says what each spelling does.
    verify: bool = setting(True, flag=False, negative="--no-verify",
                           help="The check after freezing: original and frozen graph run side by side on the same "
                                "seeded inputs, and a difference beyond float tolerance is an error. On by default; "
                                "--no-verify (verify = false) skips it.")
    allow_host_ops: bool = allow_host_ops_setting()

    def __post_init__(self) -> None:
        # A value given as a bool or number from Python (False) is the text the command line gives ("false").
        object.__setattr__(self, "assignments", {str(k): _as_text(v) for k, v in dict(self.assignments).items()})
        object.__setattr__(self, "outputs", tuple(o.strip() for o in self.outputs if o.strip()))
        if self.batch is not None and not (1 <= self.batch <= MAX_DIM or self.batch == -1):
            raise FreezeError(f"--batch {self.batch}: expected 1 to {MAX_DIM}, or -1 to keep the first dim unknown")

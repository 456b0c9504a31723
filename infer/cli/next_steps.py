"""What to do after a failed comparison, as commands a user can paste: where it fails, and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from binio.shown_path import shown_path


def next_steps(result: Any, contract: Any, model: Path, bins: Path, actual: Path, *, gear: str = "") -> list[str]:
    """``next: <command>   # what it does``, a line each, for a failed run: --layerwise (or an NPU dump) to find
    where, tune-precision to fix an fp16 cause; the paths as the user gave them. `gear`: the gear these commands are
    for, in a comparison across gears (--layerwise takes one dataset), said after what each does."""
    if result.passed:
        return []
    found = []
    where = "finds the op" if result.cause else "where the converted model leaves TensorFlow"
    target = contract.converted.target if contract.converted is not None else ""
    model_text, bins_text = shown_path(model), shown_path(bins)
    if result.layerwise is None and target == "onnx":
        found.append((f"infer compare {model_text} --input {bins_text} --actual {shown_path(actual)} --layerwise",
                      where))
    elif result.layerwise is None and target == "om":
        # An om converted on a host (convert --host) runs there too: its dump is fetched back (docs/remote.md).
        remote = contract.converted.settings.get("remote") or {}
        host = f" --host {remote['host']}" if isinstance(remote, dict) and remote.get("host") else ""
        found.append((f"infer run {model_text} --input {bins_text} -o out --dump{host}, then infer compare "
                      f"{model_text} --input {bins_text} --npu-dump out/<timestamp>/dump",
                      f"on {remote['host'] if host else 'the Ascend server'}: {where}"))
    if result.cause:
        found.append((f"infer tune-precision {model_text} --input {bins_text} -o tuned",
                       "the ops to keep in fp32 (ATC's --keep_dtype): the fix"))
    of = f" ({gear})" if gear else ""
    return [f"{'next: ' if i == 0 else '      '}{command}   # {why}{of}" for i, (command, why) in enumerate(found)]

"""The Ascend chips ATC's --soc_version takes, as CANN 7/8 name them; newer chips pass with an explicit override."""

from __future__ import annotations

import difflib

from atc_wrap.errors import ConvertError

KNOWN_SOC_VERSIONS: tuple[str, ...] = (
    "Ascend310", "Ascend310B1", "Ascend310B2", "Ascend310B3", "Ascend310B4",
    "Ascend310P1", "Ascend310P3", "Ascend310P5", "Ascend310P7",
    "Ascend910", "Ascend910A", "Ascend910B", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA",
    "Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4", "Ascend910B4-1",
    "Ascend910_9391", "Ascend910_9381", "Ascend910_9372", "Ascend910_9392", "Ascend910_9382", "Ascend910_9362",
)

# The chip the stand-in plans for when no --soc-version is given (the demo's, and the oldest table's): named in
# convert's output and in model.json's precision plan as assumed.
ASSUMED_SOC_VERSION = "Ascend310"


def check_soc_version(soc: str, *, allow_unknown: bool = False, required: bool = True) -> str:
    """The soc version as ATC spells it; refuses an empty one (unless not `required`: the stand-in then assumes
    ASSUMED_SOC_VERSION, and "" comes back), and an unknown one unless `allow_unknown`. The stand-in refuses what ATC
    would, so that a typo is caught on the workstation, not on the server."""
    if not soc and not required:
        return ""
    if not soc:
        raise ConvertError("--soc-version is required for --target om: ATC compiles for one chip",
                           hint="npu-smi info names the chip, e.g. --soc-version Ascend310P3")
    if soc in KNOWN_SOC_VERSIONS or allow_unknown:
        return soc
    close = difflib.get_close_matches(soc, KNOWN_SOC_VERSIONS, n=1)
    suggestion = f" (did you mean {close[0]}?)" if close else ""
    raise ConvertError(
        f"--soc-version {soc!r}: not a chip ATC knows{suggestion}; known: {', '.join(KNOWN_SOC_VERSIONS)}",
        hint="for a chip newer than this list, add --allow-unknown-soc",
    )

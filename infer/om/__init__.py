"""The om's own descriptors, shared by convert (``--use-om``, and the om ATC wrote), run (msame, ais_bench), dump-bin
and compare: what the om takes and gives, in model.json's names, checked against the frozen pb and against the
bins fed to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.om.aipp import aipp_from_om
    from infer.om.bins import check_bins_for_om
    from infer.om.descriptors import (
        RECORD_KEY,
        OmDescriptors,
        OmGears,
        OmInput,
        OmOutput,
        match_om,
        om_descriptors,
        starts_as_om,
    )
    from infer.om.entry import check_om_bins, with_om_descriptors
    from infer.om.errors import OmBinsError, OmFileError, OmMismatchError

__all__ = [
    "RECORD_KEY", "OmBinsError", "OmDescriptors", "OmFileError", "OmGears", "OmInput", "OmMismatchError",
    "OmOutput", "aipp_from_om", "check_bins_for_om", "check_om_bins", "match_om", "om_descriptors", "starts_as_om",
    "with_om_descriptors",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "RECORD_KEY": "infer.om.descriptors",
    "OmBinsError": "infer.om.errors",
    "OmDescriptors": "infer.om.descriptors",
    "OmFileError": "infer.om.errors",
    "OmGears": "infer.om.descriptors",
    "OmInput": "infer.om.descriptors",
    "OmMismatchError": "infer.om.errors",
    "OmOutput": "infer.om.descriptors",
    "aipp_from_om": "infer.om.aipp",
    "check_bins_for_om": "infer.om.bins",
    "check_om_bins": "infer.om.entry",
    "match_om": "infer.om.descriptors",
    "om_descriptors": "infer.om.descriptors",
    "starts_as_om": "infer.om.descriptors",
    "with_om_descriptors": "infer.om.entry",
})

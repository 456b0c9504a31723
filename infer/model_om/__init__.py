"""The om's own descriptors, shared by convert (``--use-om``, and the om ATC wrote), run (msame, ais_bench), dump-bin
and compare: what the om takes and gives, in model.json's names, checked against the frozen pb and against the
bins fed to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infer._exports import lazy_exports

if TYPE_CHECKING:
    from infer.model_om.bins import check_bins_for_om, check_om_bins
    from infer.model_om.descriptors import (
        RECORD_KEY,
        OmDescriptors,
        OmGears,
        OmInput,
        OmOutput,
        match_om,
        om_descriptors,
        with_om_descriptors,
    )
    from infer.model_om.errors import OmBinsError, OmFileError, OmMismatchError

__all__ = [
    "RECORD_KEY", "OmBinsError", "OmDescriptors", "OmFileError", "OmGears", "OmInput", "OmMismatchError",
    "OmOutput", "check_bins_for_om", "check_om_bins", "match_om", "om_descriptors", "with_om_descriptors",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "RECORD_KEY": "infer.model_om.descriptors",
    "OmBinsError": "infer.model_om.errors",
    "OmDescriptors": "infer.model_om.descriptors",
    "OmFileError": "infer.model_om.errors",
    "OmGears": "infer.model_om.descriptors",
    "OmInput": "infer.model_om.descriptors",
    "OmMismatchError": "infer.model_om.errors",
    "OmOutput": "infer.model_om.descriptors",
    "check_bins_for_om": "infer.model_om.bins",
    "check_om_bins": "infer.model_om.bins",
    "match_om": "infer.model_om.descriptors",
    "om_descriptors": "infer.model_om.descriptors",
    "with_om_descriptors": "infer.model_om.descriptors",
})

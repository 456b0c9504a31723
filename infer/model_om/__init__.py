"""The om's own descriptors, shared by convert (``--use-om``, and the om ATC wrote), run (msame, ais_bench), dump-bin
and compare: what the om takes and gives, in model.json's names, checked against the frozen pb and against the
bins fed to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from binio.exports import lazy_exports

if TYPE_CHECKING:  # the exports (binio/exports.py): type checkers read them here, lazy_exports on first use
    from infer.model_om.bins import check_bins_for_om as check_bins_for_om
    from infer.model_om.descriptors import RECORD_KEY as RECORD_KEY
    from infer.model_om.descriptors import OmDescriptors as OmDescriptors
    from infer.model_om.descriptors import OmGears as OmGears
    from infer.model_om.descriptors import OmInput as OmInput
    from infer.model_om.descriptors import OmOutput as OmOutput
    from infer.model_om.descriptors import match_om as match_om
    from infer.model_om.descriptors import om_descriptors as om_descriptors
    from infer.model_om.entry import check_om_bins as check_om_bins
    from infer.model_om.entry import with_om_descriptors as with_om_descriptors
    from infer.model_om.errors import OmBinsError as OmBinsError
    from infer.model_om.errors import OmFileError as OmFileError
    from infer.model_om.errors import OmMismatchError as OmMismatchError


__getattr__, __dir__ = lazy_exports(__name__)

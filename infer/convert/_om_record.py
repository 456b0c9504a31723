"""The om ATC just wrote, read back: model.json records what the om itself takes and gives (its descriptors, under
``converted.settings.om``) rather than what the command line predicted, since extra ATC arguments (``--atc-arg``)
or ATC's own choices can make them differ. An om this reader cannot open keeps the predicted specs, and so does one
whose descriptors do not match the pb, each with a warning."""

from __future__ import annotations

import logging
from dataclasses import replace

from atc_wrap.ascend_files.errors import OmFileError
from atc_wrap.ascend_files.om_model import read_om
from infer.contract import ConvertedInfo, ModelContract
from infer.model_om import RECORD_KEY, OmMismatchError, match_om

log = logging.getLogger(__name__)


def with_om_record(contract: ModelContract, converted: ConvertedInfo) -> ConvertedInfo:
    """`converted` with the om's own input and output specs and its record, where the om reads."""
    path = contract.folder / converted.path
    try:
        found = match_om(read_om(path), contract.inputs, contract.outputs)
    except (OmFileError, OmMismatchError) as err:
        log.warning("%s; the specs predicted from the ATC command are recorded", err.message)
        return converted
    for old, new in zip((*converted.inputs, *converted.outputs), (*found.input_specs, *found.output_specs),
                        strict=False):
        if old != new:
            log.warning("%s: %s is %s in the om ATC wrote, %s as predicted: the om's is recorded", path, new.name,
                        new.describe(), old.describe())
    return replace(converted, inputs=found.input_specs, outputs=found.output_specs,
                   soc_version=converted.soc_version or found.soc_version,
                   settings={**converted.settings, RECORD_KEY: found.to_json()})

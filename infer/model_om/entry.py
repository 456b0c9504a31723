"""What the stages that take any converted model (dump-bin, compare) ask of the om package: the contract with the
om's own descriptors, and the bins checked against them. Both are nothing to do for a model not converted to an om,
and that is decided here, before the om reader (atc_wrap's om and GE-attribute parsers, tens of milliseconds to
import) is loaded: a dump of an .npy for the stand-in never pays for it."""

from __future__ import annotations

from binio.manifest import DatasetManifest
from infer.contract import ModelContract


def _is_om(contract: ModelContract) -> bool:
    return contract.converted is not None and contract.converted.target == "om"


def with_om_descriptors(contract: ModelContract) -> ModelContract:
    """`infer.model_om.descriptors.with_om_descriptors`, for an om only (any other contract is returned as it is)."""
    if not _is_om(contract):
        return contract
    # on use: the om reader, which a model converted to anything else never needs
    from infer.model_om.descriptors import with_om_descriptors as with_read_descriptors

    return with_read_descriptors(contract)


def check_om_bins(manifest: DatasetManifest, contract: ModelContract) -> None:
    """`infer.model_om.bins.check_om_bins`, for an om only (the bins of any other model have no om to fit)."""
    if not _is_om(contract):
        return
    # on use: the om reader, which a model converted to anything else never needs
    from infer.model_om.bins import check_om_bins as check_against_om

    check_against_om(manifest, contract)

"""Bins checked against the om's own input descriptors, wherever an om is fed them (run on msame or ais_bench,
compare of an om's outputs): the mismatch users hit most is a float32 bin for a float16 om input, or a batch the om
was not built for, and neither msame nor ais_bench says so (msame checks nothing, ais_bench only byte counts)."""

from __future__ import annotations

from binio.manifest import DatasetManifest
from binio.spec import format_shape
from infer.contract import ModelContract
from infer.model_om.descriptors import OmDescriptors, OmInput, om_descriptors
from infer.model_om.errors import OmBinsError


def _batch_refusal(where: str, om: OmDescriptors, item: OmInput, batch: int) -> OmBinsError | None:
    """A batch the om was not built for: another fixed batch, or no gear of a dynamic-batch om."""
    wanted = item.spec.shape[0] if item.spec.shape else None
    gears = om.gears.batches() if om.gears is not None else ()
    if wanted is not None and batch != wanted:
        return OmBinsError(f"{where}: bins hold batches of {batch}, {om.name} takes batch {wanted} for input "
                           f"{item.spec.name} {format_shape(item.spec.shape)} (its own input descriptor)",
                           hint=f"re-run infer dump-bin with --batch {wanted}, or give the om built for batch {batch}")
    if wanted is None and gears and batch not in gears:
        return OmBinsError(f"{where}: bins hold batches of {batch}, {om.name} was built for batches "
                           f"{', '.join(str(g) for g in gears)} (its dynamic batch gears)",
                           hint=f"re-run infer dump-bin with --batch {max(gears)}")
    return None


def check_bins_for_om(manifest: DatasetManifest, om: OmDescriptors) -> None:
    """Refuses, naming the folder, the om and both values, bins whose dtype, rank, batch or other dims are not what
    the om's own descriptor of that input says. Inputs the dataset lacks are left to the run's own checks."""
    for item in om.inputs:
        held = manifest.find(item.spec.name)
        if held is None:
            continue
        where = str(manifest.root / held.folder)
        spec = item.spec
        if held.dtype != spec.dtype:
            hint = "re-run infer dump-bin for the converted model: it writes the om's input dtype"
            if item.aipp:
                hint = "the om preprocesses this input with AIPP: dump-bin its images for the om (uint8)"
            raise OmBinsError(f"{where}: bins are {held.dtype}, {om.name} takes {spec.dtype} for input {spec.name} "
                              "(its own input descriptor)", hint=hint)
        if len(held.shape) != len(spec.shape):
            raise OmBinsError(f"{where}: bins have shape {format_shape(held.shape)}, {om.name} takes "
                              f"{format_shape(spec.shape)} for input {spec.name} (its own input descriptor)")
        refusal = _batch_refusal(where, om, item, held.shape[0]) if held.shape else None
        if refusal is not None:
            raise refusal
        if any(want is not None and want != got for want, got in zip(spec.shape[1:], held.shape[1:], strict=True)):
            raise OmBinsError(f"{where}: bins have shape {format_shape(held.shape)}, {om.name} takes "
                              f"{format_shape(spec.shape)} for input {spec.name} (its own input descriptor)")


def check_om_bins(manifest: DatasetManifest, contract: ModelContract) -> None:
    """`check_bins_for_om` against the contract's om, where it has readable descriptors (else nothing to check)."""
    found = om_descriptors(contract)
    if found is not None:
        check_bins_for_om(manifest, found)

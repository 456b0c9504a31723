"""What `infer compare` refuses, by kind (each an InferError: one line naming the file, tensor or option). A
threshold's own refusal is `infer.compare.thresholds.ThresholdError`, which the options import without numpy."""

from __future__ import annotations

from binio.errors import InferError
from infer.compare.thresholds import ThresholdError

__all__ = ["CompareError", "ExpectedErrorUnavailable", "LabelsError", "LayerwiseError", "RunFolderError",
           "SameBackendError", "ThresholdError"]


class CompareError(InferError):
    """Datasets that cannot be compared together (two of one gear, --golden for several)."""


class ExpectedErrorUnavailable(InferError):
    """--expected-from-emulation where the stand-in cannot emulate the converted model's precision."""


class LabelsError(InferError):
    """A labels file that cannot be read or does not fit the dataset."""


class RunFolderError(InferError):
    """A run folder that is missing, empty, or lacks an output file the dataset needs."""


class SameBackendError(InferError):
    """Golden and actual from the same graph on the same backend: a comparison that proves nothing."""


class LayerwiseError(InferError):
    """A model or dataset --layerwise or --dump-golden cannot use."""

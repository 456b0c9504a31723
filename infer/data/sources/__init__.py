"""Where dump-bin's samples come from: npy/npz arrays, image folders, existing bins, generators."""

from infer.data.sources.base import SampleSource
from infer.data.sources.open import open_source

__all__ = ["SampleSource", "open_source"]

"""Where dump-bin's samples come from: npy/npz arrays, image folders, existing bins, generators."""

from infer.dump_bin._sources.base import SampleSource as SampleSource
from infer.dump_bin._sources.open import open_source as open_source

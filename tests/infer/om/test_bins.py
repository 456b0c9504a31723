"""Bins checked against the om's own input descriptors (`infer.model_om.check_bins_for_om`): the mismatches users hit
most, a float32 bin for a float16 om input and a batch the om was not built for, refused naming folder, om and
values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from atc_wrap.ascend_files.om_model import read_om
from binio.spec import TensorSpec
from infer.model_om import OmBinsError, OmDescriptors, check_bins_for_om, match_om
from tests.builders.bins import write_dataset
from tests.infer.om_files import OmPlan, write_om

X = TensorSpec("x:0", "float32", (None, 3))
Y = TensorSpec("y:0", "float32", (None, 3))


def _om(tmp_path: Path, **plan: Any) -> OmDescriptors:
    path = write_om(tmp_path / "model.om", OmPlan([X], [Y], **plan))
    return match_om(read_om(path), (X,), (Y,))


def _bins(tmp_path: Path, batch: int, dtype: type = np.float32) -> Path:
    write_dataset(tmp_path / "bins", {"x:0": [np.zeros((batch, 3), dtype)] * 2})
    return tmp_path / "bins"


def test_float32_bins_for_a_float16_om_input_are_refused(tmp_path: Path) -> None:
    from binio.manifest import load_manifest

    om = _om(tmp_path, input_dtypes={"x:0": "float16"}, shapes={"x:0": (2, 3), "y:0": (2, 3)})
    with pytest.raises(OmBinsError) as caught:
        check_bins_for_om(load_manifest(_bins(tmp_path, 2)), om)
    assert caught.value.message == (f"{tmp_path / 'bins' / 'x'}: bins are float32, model.om takes float16 for input "
                                    "x:0 (its own input descriptor)")
    check_bins_for_om(load_manifest(_bins(tmp_path / "ok", 2, np.float16)), om)  # the om's own dtype passes


def test_a_batch_the_om_was_not_built_for_is_refused(tmp_path: Path) -> None:
    from binio.manifest import load_manifest

    om = _om(tmp_path, shapes={"x:0": (2, 3), "y:0": (2, 3)})
    with pytest.raises(OmBinsError) as caught:
        check_bins_for_om(load_manifest(_bins(tmp_path, 4)), om)
    assert caught.value.message == (f"{tmp_path / 'bins' / 'x'}: bins hold batches of 4, model.om takes batch 2 for "
                                    "input x:0 (2,3) (its own input descriptor)")


def test_a_dynamic_batch_om_takes_its_gears_only(tmp_path: Path) -> None:
    from binio.manifest import load_manifest

    om = _om(tmp_path, batch_gears=[1, 2, 8])
    check_bins_for_om(load_manifest(_bins(tmp_path / "two", 2)), om)
    with pytest.raises(OmBinsError) as caught:
        check_bins_for_om(load_manifest(_bins(tmp_path / "four", 4)), om)
    assert caught.value.message == (f"{tmp_path / 'four' / 'bins' / 'x'}: bins hold batches of 4, model.om was "
                                    "built for batches 1, 2, 8 (its dynamic batch gears)")

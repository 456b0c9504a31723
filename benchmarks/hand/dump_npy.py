"""What a user writes by hand instead of `infer dump-bin` for an .npy: memory-map, slice, cast, write.

    python dump_npy.py DATA.npy OUT_FOLDER DTYPE BATCH

The last batch is padded with zero rows, as dump-bin pads it, so that both sides' files are equal byte for byte.
"""

import os
import sys

import numpy as np

source, out, dtype, batch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
os.makedirs(out)
data = np.load(source, mmap_mode="r")
for index, start in enumerate(range(0, len(data), batch)):
    rows = data[start:start + batch].astype(dtype)
    if len(rows) < batch:
        rows = np.concatenate([rows, np.zeros((batch - len(rows), *rows.shape[1:]), dtype)])
    rows.tofile(os.path.join(out, f"{index:06d}.bin"))

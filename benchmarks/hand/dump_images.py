"""What a user writes by hand instead of `infer dump-bin` for a folder of images: one process, Pillow, numpy.

    python dump_images.py IMAGES OUT_FOLDER BATCH SIZE SCALE

Each image: RGB, shorter side resized to SIZE (bilinear), centre crop SIZE x SIZE, float32 times SCALE; batches of
BATCH, the last padded with zero rows, as dump-bin writes them, so that both sides' files are equal byte for byte.
"""

import os
import sys

import numpy as np
from PIL import Image

folder, out, batch, size, scale = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
os.makedirs(out)
names = sorted(n for n in os.listdir(folder) if n.lower().endswith((".jpg", ".jpeg", ".png")))
for index, start in enumerate(range(0, len(names), batch)):
    rows = np.zeros((batch, size, size, 3), np.float32)
    for row, name in enumerate(names[start:start + batch]):
        with Image.open(os.path.join(folder, name)) as image:
            image = image.convert("RGB")
            width, height = image.size
            factor = size / min(width, height)
            scaled = (max(size, round(width * factor)), max(size, round(height * factor)))
            image = image.resize(scaled, Image.Resampling.BILINEAR)
            left, top = (scaled[0] - size) // 2, (scaled[1] - size) // 2
            pixels = np.asarray(image.crop((left, top, left + size, top + size)), dtype=np.float32)
        rows[row] = pixels * np.float32(scale) if scale != 1.0 else pixels
    rows.tofile(os.path.join(out, f"{index:06d}.bin"))

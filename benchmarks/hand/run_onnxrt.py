"""What a user writes by hand instead of `infer run --backend onnxrt`: an InferenceSession over the bins.

    python run_onnxrt.py MODEL.onnx BINS_FOLDER OUT_FOLDER N,H,W,C

One untimed warm-up run of the first batch (as infer run's default), then every ``*.bin`` of BINS_FOLDER in name
order, read with np.fromfile, run, and each output written with tofile as ``<stem>_output_<i>.bin``.
"""

import os
import sys

import numpy as np
import onnxruntime as ort

model, bins, out, shape = sys.argv[1], sys.argv[2], sys.argv[3], tuple(int(d) for d in sys.argv[4].split(","))
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
name = session.get_inputs()[0].name
os.makedirs(out)
names = sorted(n for n in os.listdir(bins) if n.endswith(".bin"))
session.run(None, {name: np.fromfile(os.path.join(bins, names[0]), np.float32).reshape(shape)})
for file_name in names:
    feed = np.fromfile(os.path.join(bins, file_name), np.float32).reshape(shape)
    for index, output in enumerate(session.run(None, {name: feed})):
        output.tofile(os.path.join(out, f"{file_name[:-4]}_output_{index}.bin"))

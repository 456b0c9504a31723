"""What a user writes by hand instead of `infer run --backend tf`: a TF1 session over the frozen pb.

    python run_tf.py MODEL.pb BINS_FOLDER OUT_FOLDER N,H,W,C INPUT:0 OUTPUT:0[,OUTPUT:0...]

One untimed warm-up run of the first batch, then every ``*.bin`` in name order, read with np.fromfile, run, and
each output written with tofile as ``<stem>_output_<i>.bin``.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

model, bins, out, shape = sys.argv[1], sys.argv[2], sys.argv[3], tuple(int(d) for d in sys.argv[4].split(","))
input_name, output_names = sys.argv[5], sys.argv[6].split(",")
graph_def = tf.compat.v1.GraphDef()
with open(model, "rb") as handle:
    graph_def.ParseFromString(handle.read())
graph = tf.Graph()
with graph.as_default():
    tf.compat.v1.import_graph_def(graph_def, name="")
session = tf.compat.v1.Session(graph=graph)
fetches = [graph.get_tensor_by_name(n) for n in output_names]
feed_tensor = graph.get_tensor_by_name(input_name)
os.makedirs(out)
names = sorted(n for n in os.listdir(bins) if n.endswith(".bin"))
session.run(fetches, {feed_tensor: np.fromfile(os.path.join(bins, names[0]), np.float32).reshape(shape)})
for file_name in names:
    feed = np.fromfile(os.path.join(bins, file_name), np.float32).reshape(shape)
    for index, output in enumerate(session.run(fetches, {feed_tensor: feed})):
        output.tofile(os.path.join(out, f"{file_name[:-4]}_output_{index}.bin"))

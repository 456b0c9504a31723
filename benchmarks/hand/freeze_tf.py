"""What a user writes by hand instead of `infer freeze`: restore the checkpoint, fold variables into constants.

    python freeze_tf.py CHECKPOINT_PREFIX OUTPUT_NODE OUT.pb
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf

prefix, output, out = sys.argv[1], sys.argv[2], sys.argv[3]
tf1 = tf.compat.v1
graph = tf.Graph()
with graph.as_default(), tf1.Session(graph=graph) as session:
    saver = tf1.train.import_meta_graph(prefix + ".meta", clear_devices=True)
    saver.restore(session, prefix)
    frozen = tf1.graph_util.convert_variables_to_constants(session, graph.as_graph_def(), [output])
with open(out, "wb") as handle:
    handle.write(frozen.SerializeToString())

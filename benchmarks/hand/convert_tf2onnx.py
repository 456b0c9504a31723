"""What a user writes by hand instead of `infer convert --target onnx`: tf2onnx's own conversion of the frozen pb.

    python convert_tf2onnx.py MODEL.pb INPUT:0 OUTPUT:0 OUT.onnx

The same as ``python -m tf2onnx.convert --input MODEL.pb --inputs INPUT:0 --outputs OUTPUT:0 --output OUT.onnx``,
without that command's argument parsing and logging set-up.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf
import tf2onnx

pb, input_name, output_name, out = sys.argv[1:5]
graph_def = tf.compat.v1.GraphDef()
with open(pb, "rb") as handle:
    graph_def.ParseFromString(handle.read())
tf2onnx.convert.from_graph_def(graph_def, input_names=[input_name], output_names=[output_name], output_path=out)

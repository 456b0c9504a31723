"""Models whose outputs are sets, written here (issue 38): an SSD-like head whose boxes go through NMS, and a top-k.

- `build_detector`: x (1, 24, 5) per anchor: 4 box offsets and a score logit; boxes = anchors + 0.1 x offsets,
  scores = sigmoid(logit); NMS (padded to 8, IoU 0.5) keeps the best boxes in score order: `det_boxes` (1, 8, 4) and
  `det_scores` (1, 8) gathered by the kept indices; `boxes` (1, 24, 4), every box before NMS, is no set;
- `build_topk`: x (2, 16) -> the 4 largest of tanh(x) and their positions: `top_values` (2, 4), `top_positions`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ANCHORS = 24
KEPT = 8


def build_detector(tf: Any) -> None:
    tf1 = tf.compat.v1
    rng = np.random.default_rng(5)
    corners = rng.uniform(0.0, 0.7, size=(ANCHORS, 2)).astype(np.float32)
    sizes = rng.uniform(0.1, 0.3, size=(ANCHORS, 2)).astype(np.float32)
    anchors = tf.constant(np.concatenate([corners, corners + sizes], axis=1), name="anchors")
    x = tf1.placeholder(tf.float32, [1, ANCHORS, 5], name="x")
    boxes = tf.add(anchors, 0.1 * x[0, :, :4], name="decoded")
    scores = tf.sigmoid(x[0, :, 4], name="scores")
    # One NonMaxSuppressionV4 op (what tf.image.non_max_suppression_padded writes in TF 1.x; TF 2's is a loop)
    kept, _ = tf.raw_ops.NonMaxSuppressionV4(boxes=boxes, scores=scores, max_output_size=KEPT, iou_threshold=0.5,
                                             score_threshold=float("-inf"), pad_to_max_output_size=True, name="nms")
    tf.expand_dims(tf.gather(boxes, kept), 0, name="det_boxes")
    tf.expand_dims(tf.gather(scores, kept), 0, name="det_scores")
    tf.expand_dims(boxes, 0, name="boxes")


def build_topk(tf: Any) -> None:
    x = tf.compat.v1.placeholder(tf.float32, [2, 16], name="x")
    values, positions = tf.math.top_k(tf.tanh(x), k=4, name="top")
    tf.identity(values, name="top_values")
    tf.identity(positions, name="top_positions")

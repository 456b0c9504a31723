"""TensorFlow 1.x while loops in a frozen graph: which tensors are computed once per step inside a loop.

A while loop of TF 1.x control flow (``tf.while_loop``, what dynamic_rnn writes) is a frame: its ``Enter`` ops take
tensors in, ``Merge``/``Switch``/``NextIteration`` carry its state from step to step, its ``Exit`` ops give the final
values out. TensorFlow returns no per-step value of the tensors inside (a fetch of one fails), and the ONNX Loop
tf2onnx makes of it keeps them inside its body, which ONNX Runtime does not return either: they are compared at the
loop's outputs (its Exit values, the TensorArray it stacked), and a report says once what the loop holds, not once
per tensor. TensorArray ops carry a float "flow" scalar that orders reads and writes; it holds no values to
compare.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# TensorArray ops whose float output is the flow scalar (their values are read by TensorArrayReadV3/GatherV3).
_FLOW_OPS = frozenset({"TensorArrayV3", "TensorArrayScatterV3", "TensorArrayWriteV3", "TensorArraySplitV3",
                       "TensorArrayGradV3", "TensorArrayV2", "TensorArrayScatterV2", "TensorArrayWriteV2",
                       "TensorArraySplitV2"})
_LOOP_SUFFIX = "/while_context"


def is_flow(op_type: str) -> bool:
    """Whether the op's float output is a TensorArray's flow scalar, not values."""
    return op_type in _FLOW_OPS


def loop_frames(operations: Iterable[Any]) -> dict[str, str]:
    """Op name -> the outermost while loop it runs inside (the loop's frame name, ``rnn/while`` for
    ``rnn/while/while_context``), for the ops inside a TF 1.x while loop; ops outside every loop are left out."""
    return {name: _loop_name(frame[0]) for name, frame in frame_paths(operations).items() if frame}


def frame_paths(operations: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    """Op name -> the frames it runs in, outermost first (empty outside every loop; an Exit is in the frame around
    the one it leaves)."""
    ops = list(operations)
    frames: dict[str, tuple[str, ...]] = {}
    by_name = {op.name: op for op in ops}
    for _ in range(2):  # a second pass reaches what reads a NextIteration made after it
        for op in ops:
            sources = [name.lstrip("^").split(":")[0] for name in op.node_def.input]
            inherited = next((frames[name] for name in sources if frames.get(name)), ())
            if op.type in ("Enter", "RefEnter"):
                frame = op.get_attr("frame_name")
                parent = frames.get(sources[0], ()) if sources else ()
                frames[op.name] = (*parent, frame.decode() if isinstance(frame, bytes) else str(frame))
            elif op.type in ("Exit", "RefExit"):
                frames[op.name] = frames.get(sources[0], ())[:-1] if sources and sources[0] in by_name else ()
            elif inherited:
                frames[op.name] = inherited
    return frames


def _loop_name(frame: str) -> str:
    return frame[: -len(_LOOP_SUFFIX)] if frame.endswith(_LOOP_SUFFIX) else frame

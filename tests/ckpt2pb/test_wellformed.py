"""ckpt2pb.wellformed, held as properties: a constant is accepted only when its stored data fits its shape (then
numpy reads it), and a library only when no function calls itself, directly or through others (TensorFlow's import
recursed into such a function until signal 11)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckpt2pb.wellformed import MAX_CONSTANT_BYTES, MalformedGraphError, check_graph_def
from tests.builders.graphs import const_graph_def


@settings(max_examples=300, deadline=None)
@given(dims=st.lists(st.one_of(st.integers(-2, 4), st.integers(0, 3000)), max_size=3),
       content=st.sampled_from([0, 4, 8, 16, 36, 4000]), values=st.integers(0, 40))
def test_a_constant_is_accepted_only_when_its_data_fits_its_shape(dims: list[int], content: int,
                                                                  values: int) -> None:
    from tensorflow.python.framework import tensor_util

    graph_def = const_graph_def(dims, b"\1" * content, [0.5] * values)
    elements = math.prod(dims)
    fits = all(d >= 0 for d in dims) and (content == elements * 4 if content else
                                          values <= elements and elements * 4 <= MAX_CONSTANT_BYTES)
    try:
        check_graph_def(graph_def, "g.pb")
    except MalformedGraphError as refusal:
        assert not fits and refusal.message.startswith("g.pb: constant 'k' ") and "\n" not in refusal.message
        return
    assert fits
    if elements <= 10**6:  # numpy reads what was accepted (the broadcast of a few values included)
        assert tensor_util.MakeNdarray(graph_def.node[0].attr["value"].tensor).size == elements


def _library(calls: dict[int, list[int]], functions: int) -> Any:
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    for index in range(functions):
        function = graph_def.library.function.add()
        function.signature.name = f"f{index}"
        function.signature.input_arg.add(name="x", type=1)
        function.signature.output_arg.add(name="y", type=1)
        for position, callee in enumerate(calls.get(index, [])):  # a node name once per function: two calls, two
            node = function.node_def.add(name=f"call_{position}_{callee}", op="PartitionedCall", input=["x"])
            node.attr["f"].func.name = f"f{callee}"
        function.ret["y"] = "x"
    return graph_def


def _has_cycle(calls: dict[int, list[int]], functions: int) -> bool:
    state: dict[int, int] = {}

    def visit(node: int) -> bool:
        state[node] = 1
        for callee in calls.get(node, []):
            if state.get(callee) == 1 or (state.get(callee) is None and visit(callee)):
                return True
        state[node] = 2
        return False

    return any(state.get(f) is None and visit(f) for f in range(functions))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.just(n), st.dictionaries(st.integers(0, n - 1), st.lists(st.integers(0, n - 1), max_size=3), max_size=n))))
def test_a_library_is_refused_exactly_when_a_function_calls_itself(drawn: tuple[int, dict[int, list[int]]]) -> None:
    functions, calls = drawn
    try:
        check_graph_def(_library(calls, functions), "g.pb")
    except MalformedGraphError as refusal:
        assert _has_cycle(calls, functions) and "calls itself" in refusal.message
        return
    assert not _has_cycle(calls, functions)


def test_a_chain_deeper_than_any_model_is_refused() -> None:
    calls = {i: [i + 1] for i in range(100)}
    with pytest.raises(MalformedGraphError, match="nests calls 65 deep, more than 64"):
        check_graph_def(_library(calls, 101), "g.pb")

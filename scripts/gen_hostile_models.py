#!/usr/bin/python3
"""Writes models that claim absurd resources, for the resource-cap tests and scripts/bench/caps.sh.

  huge_input.onnx        a graph input of 2^40 float elements (4 TB) feeding a Relu
  huge_initializer.onnx  an initializer whose dims claim 2^40 elements but that holds 4 bytes
  reshape_overflow.onnx  Reshape of a [2, 3] tensor to [2^62, 2^62, 4] (the product wraps int64)
  loop_trip_count.onnx   a Loop with trip count 2^62 and a condition that stays true
  expand_tb.onnx         Expand of a [1] tensor to [2^20, 2^20, 2^10] (4 PB of float)
  tile_tb.onnx           Tile of a [2, 2] tensor by [2^20, 2^20]
  constant_of_shape_tb.onnx  ConstantOfShape([2^40])
  function_self_call.onnx    a model-local function whose body calls itself (local.f -> local.f)
  function_cycle.onnx        two model-local functions calling each other (f -> g -> f)
  function_cycle_in_if.onnx  the cycle closed inside an If branch of a function body
  function_chain_deep.onnx   40 functions each calling the next: acyclic, nested 40 deep
  subgraph_deep.onnx         If nodes nested 20 deep

Every one is small on disk and valid protobuf; what it claims is the attack. Every subcommand
must refuse each of them with exit 3, quickly and without allocating what they claim (the
function models used to kill every subcommand with SIGSEGV: libonnx expands calls recursively).
Run with Debian's python3-onnx: /usr/bin/python3 scripts/gen_hostile_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 13)]


def save(out_dir, name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name.split(".")[0], inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="gen_hostile_models")
    model.ir_version = 8
    onnx.save(model, os.path.join(out_dir, name))


def const(name, values):
    """An int64 initializer (shapes, repeats, trip counts)."""
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


LOCAL = [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)]


def function(name, nodes):
    """A model-local function of domain "local" from x to y."""
    return helper.make_function("local", name, ["x"], ["y"], nodes, LOCAL)


def call(name, node_name=""):
    return helper.make_node(name, ["x"], ["y"], domain="local", name=node_name)


def save_with_functions(out_dir, name, functions):
    """A graph calling local.f (the first function) once, on a float[1, 4]."""
    vi = helper.make_tensor_value_info
    graph = helper.make_graph([call(functions[0].name, "call_f")], name.split(".")[0],
                              [vi("x", TensorProto.FLOAT, [1, 4])],
                              [vi("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=LOCAL, functions=functions,
                              producer_name="gen_hostile_models")
    model.ir_version = 8
    onnx.save(model, os.path.join(out_dir, name))


def branch(node):
    """A branch graph of an If: runs `node` on the outer x, outputs y."""
    return helper.make_graph([node], "branch", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])


def nested_ifs(levels):
    """`levels` If nodes, each the then-branch of the one above; the innermost runs a Relu."""
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    for level in range(levels):
        node = helper.make_node("If", ["cond"], ["y"], name=f"if{level}",
                                then_branch=branch(node), else_branch=branch(
                                    helper.make_node("Identity", ["x"], ["y"], name=f"id{level}")))
    return node


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    f = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    save(out_dir, "huge_input.onnx", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
         [vi("x", f, [1 << 20, 1 << 20])], [vi("y", f, [1 << 20, 1 << 20])])

    big = TensorProto(name="w", data_type=f, dims=[1 << 20, 1 << 20], raw_data=b"\0\0\0\0")
    save(out_dir, "huge_initializer.onnx", [helper.make_node("Relu", ["w"], ["y"], name="relu")],
         [], [vi("y", f, ["d0", "d1"])], [big])

    x = numpy_helper.from_array(np.zeros((2, 3), np.float32), "x")
    save(out_dir, "reshape_overflow.onnx",
         [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], [],
         [vi("y", f, ["d0", "d1", "d2"])], [x, const("shape", [1 << 62, 1 << 62, 4])])

    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"], name="count")],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
         vi("acc_in", f, [1])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", f, [1])],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    save(out_dir, "loop_trip_count.onnx",
         [helper.make_node("Loop", ["M", "cond", "acc0"], ["acc"], name="loop", body=body)], [],
         [vi("acc", f, [1])],
         [const("M", 1 << 62), numpy_helper.from_array(np.array(True), "cond"),
          numpy_helper.from_array(np.zeros(1, np.float32), "acc0")])

    one = numpy_helper.from_array(np.ones(1, np.float32), "x")
    save(out_dir, "expand_tb.onnx",
         [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")], [],
         [vi("y", f, ["d0", "d1", "d2"])], [one, const("shape", [1 << 20, 1 << 20, 1 << 10])])

    two = numpy_helper.from_array(np.ones((2, 2), np.float32), "x")
    save(out_dir, "tile_tb.onnx", [helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile")],
         [], [vi("y", f, ["d0", "d1"])], [two, const("repeats", [1 << 20, 1 << 20])])

    save(out_dir, "constant_of_shape_tb.onnx",
         [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill")], [],
         [vi("y", f, ["d0"])], [const("shape", [1 << 40])])

    save_with_functions(out_dir, "function_self_call.onnx", [function("f", [call("f")])])
    save_with_functions(out_dir, "function_cycle.onnx",
                        [function("f", [call("g")]), function("g", [call("f")])])
    cond = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(True)))
    inner = helper.make_node("If", ["c"], ["y"], then_branch=branch(call("f")),
                             else_branch=branch(helper.make_node("Relu", ["x"], ["y"])))
    save_with_functions(out_dir, "function_cycle_in_if.onnx",
                        [function("f", [call("g")]), function("g", [cond, inner])])
    chain = [function(f"f{i}", [call(f"f{i + 1}")]) for i in range(39)]
    chain.append(function("f39", [helper.make_node("Relu", ["x"], ["y"])]))
    save_with_functions(out_dir, "function_chain_deep.onnx", chain)

    save(out_dir, "subgraph_deep.onnx", [nested_ifs(20)],
         [vi("cond", TensorProto.BOOL, []), vi("x", f, [1, 4])], [vi("y", f, [1, 4])])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "hostile")

#!/usr/bin/python3
"""Writes the scale models of scripts/bench/bench_scale.sh and the bounded-output test.

  concat_undefined_N.onnx  one Concat reading N tensors that nothing defines (N error findings)
  concat_inputs_N.onnx     the same Concat reading N graph inputs of shape [1] (valid)
  relu_chain_N.onnx        N Relu nodes in a chain, input [1, 8]

Usage: /usr/bin/python3 scripts/gen_scale_models.py OUT_DIR N [N ...]
(Debian's python3-onnx; the protobuf is built directly so that 10^6 nodes take seconds.)
"""
import os
import sys

import onnx
from onnx import TensorProto, helper


def save(path, graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="gen_scale_models")
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def concat(n, defined):
    graph = onnx.GraphProto(name=f"concat_{n}")
    names = [f"t{i}" for i in range(n)]
    graph.node.add().CopyFrom(
        helper.make_node("Concat", names, ["y"], name="concat", axis=0))
    if defined:
        for name in names:
            graph.input.add().CopyFrom(
                helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]))
    graph.output.add().CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [n]))
    return graph


def relu_chain(n):
    graph = onnx.GraphProto(name=f"relu_chain_{n}")
    graph.input.add().CopyFrom(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8]))
    prev = "x"
    for i in range(n):
        node = graph.node.add()
        node.op_type = "Relu"
        node.name = f"relu{i}"
        node.input.append(prev)
        prev = f"r{i}" if i + 1 < n else "y"
        node.output.append(prev)
    graph.output.add().CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8]))
    return graph


def main(out_dir, sizes):
    os.makedirs(out_dir, exist_ok=True)
    for n in sizes:
        save(os.path.join(out_dir, f"concat_undefined_{n}.onnx"), concat(n, defined=False))
        save(os.path.join(out_dir, f"concat_inputs_{n}.onnx"), concat(n, defined=True))
        save(os.path.join(out_dir, f"relu_chain_{n}.onnx"), relu_chain(n))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], [int(a) for a in sys.argv[2:]])

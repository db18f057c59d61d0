#!/usr/bin/python3
"""Writes a classifier head as ONNX (opset 13): Flatten -> Gemm -> Relu -> Gemm -> Softmax on a
1x16x4x4 input, 10 classes (issue 48: a model every node of which rknn-rk3588 runs after the
converter's documented lowerings, Gemm as a Convolution, so it ports as one accelerator segment).
With --weight-input the second Gemm's weight is a graph input instead of an initializer: the
lowering's condition (a constant B) fails and that Gemm stays on the CPU.

Usage: /usr/bin/python3 scripts/gen_classifier_head.py OUT.onnx [--weight-input]
Input x: float32 [1, 16, 4, 4] (and w2: [10, 64] with --weight-input); output probs: [1, 10].
Random weights, fixed seed.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--weight-input", action="store_true",
                        help="feed the second Gemm's weight as a graph input")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((64, 256)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(np.zeros(64, np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((10, 64)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "w2"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 4, 4])]
    initializers = [w1, b1]
    if args.weight_input:
        inputs.append(helper.make_tensor_value_info("w2", TensorProto.FLOAT, [10, 64]))
    else:
        initializers.append(w2)
    graph = helper.make_graph(nodes, "classifier_head", inputs,
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes a small LeakyRelu conv net as ONNX (opset 13): the shape of model a new user brings
that nobody here tuned for (issue 28): 20 Conv (3x1 kernels), 19 LeakyRelu, 19 Max, 5 MaxPool,
batch 4. Five stages of four convs; each conv but the last is followed by LeakyRelu(0.1) and a
Max, with the block's input where the shapes match and with a per-channel floor ([1, C, 1, 1],
broadcast) where a stage changes the channel count; a 2x1 MaxPool closes each stage, so H goes
32 -> 1.

Usage: /usr/bin/python3 scripts/gen_leaky_convnet.py OUT.onnx [--batch 4]
Input x: float32 [batch, 76, 32, 1]; output y: [batch, 256, 1, 1]. Random weights, fixed seed.
"""
import argparse
import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

STAGE_CHANNELS = [64, 128, 128, 256, 256]
CONVS_PER_STAGE = 4


def build(batch):
    rng = np.random.default_rng(11)
    nodes, inits = [], []

    def init(name, value):
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def op(op_type, inputs, out, **attrs):
        nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    x, cin, index = "x", 76, 0
    total = len(STAGE_CHANNELS) * CONVS_PER_STAGE
    for stage, cout in enumerate(STAGE_CHANNELS):
        for _ in range(CONVS_PER_STAGE):
            index += 1
            w = init(f"w{index}", rng.standard_normal([cout, cin, 3, 1]) / math.sqrt(3 * cin))
            b = init(f"b{index}", rng.standard_normal([cout]) * 0.05)
            c = op("Conv", [x, w, b], f"conv{index}", kernel_shape=[3, 1], pads=[1, 0, 1, 0])
            if index == total:
                x = c
                break
            a = op("LeakyRelu", [c], f"leaky{index}", alpha=0.1)
            other = x if cin == cout else init(f"floor{index}",
                                               rng.standard_normal([1, cout, 1, 1]) * 0.1 - 0.2)
            x = op("Max", [a, other], f"max{index}")
            cin = cout
        x = op("MaxPool", [x], f"pool{stage + 1}", kernel_shape=[2, 1], strides=[2, 1])
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "leaky_convnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 76, 32, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, STAGE_CHANNELS[-1], 1, 1])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    onnx.save(build(args.batch), args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Generates testdata/demo_detector.onnx, the bundled demo model every subcommand's example uses.

A small detector-like network (opset 14): Conv/BatchNorm/ReLU blocks, a HardSwish, a custom-domain
`com.microsoft` Gelu node named Custom_GELU_0 (the kind of op NPU compilers reject and ONNX Runtime
runs), a nearest Resize x2, a skip connection across the Gelu, and a sigmoid score head.
Dynamic batch and image size: input `images` is [N, 3, H, W] (H, W divisible by 4).

Run with Debian's python3-onnx: /usr/bin/python3 scripts/make_demo_model.py [OUT]
Deterministic: the same bytes every run (fixed seed, no timestamps).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261129)
inits = []
nodes = []


def weight(name, shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    scale = scale if scale is not None else (2.0 / fan_in) ** 0.5
    inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
    return name


def conv_bn(prefix, x, cin, cout, k, stride, act):
    w = weight(f"{prefix}.conv.weight", [cout, cin, k, k])
    nodes.append(helper.make_node("Conv", [x, w], [f"{prefix}.conv"], name=f"{prefix}/Conv",
                                  kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
    bn = [weight(f"{prefix}.bn.{p}", [cout], s) for p, s in
          [("scale", 0.2), ("bias", 0.1), ("mean", 0.1)]]
    inits.append(numpy_helper.from_array((rng.random(cout) + 0.5).astype(np.float32), f"{prefix}.bn.var"))
    nodes.append(helper.make_node("BatchNormalization", [f"{prefix}.conv"] + bn + [f"{prefix}.bn.var"],
                                    [f"{prefix}.bn"], name=f"{prefix}/BatchNormalization"))
    nodes.append(helper.make_node(act, [f"{prefix}.bn"], [f"{prefix}.out"], name=f"{prefix}/{act}"))
    return f"{prefix}.out"


def main(out_path):
    stem = conv_bn("stem", "images", 3, 16, 3, 2, "Relu")            # N,16,H/2,W/2
    b1 = conv_bn("block1", stem, 16, 32, 3, 2, "Relu")               # N,32,H/4,W/4
    b2 = conv_bn("block2", b1, 32, 32, 3, 1, "HardSwish")            # N,32,H/4,W/4
    nodes.append(helper.make_node("Gelu", [b2], ["gelu.out"], name="Custom_GELU_0",
                                  domain="com.microsoft"))
    w = weight("neck.conv.weight", [16, 32, 1, 1])
    nodes.append(helper.make_node("Conv", ["gelu.out", w], ["neck.conv"], name="neck/Conv",
                                  kernel_shape=[1, 1]))
    nodes.append(helper.make_node("Relu", ["neck.conv"], ["neck.out"], name="neck/Relu"))
    inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up.scales"))
    nodes.append(helper.make_node("Resize", ["neck.out", "", "up.scales"], ["up.out"], name="up/Resize",
                                  mode="nearest", coordinate_transformation_mode="asymmetric",
                                  nearest_mode="floor"))
    nodes.append(helper.make_node("Add", ["up.out", stem], ["skip.out"], name="skip/Add"))
    w = weight("head.conv.weight", [1, 16, 3, 3])
    b = weight("head.conv.bias", [1], 0.1)
    nodes.append(helper.make_node("Conv", ["skip.out", w, b], ["head.logits"], name="head/Conv",
                                  kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Sigmoid", ["head.logits"], ["score"], name="head/Sigmoid"))

    graph = helper.make_graph(
        nodes, "demo_detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, "H", "W"])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["N", 1, "H_half", "W_half"])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="porttool-demo", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 14),
                                             helper.make_opsetid("com.microsoft", 1)])
    model.doc_string = "porttool bundled demo: detector-like net with a com.microsoft Gelu"
    onnx.checker.check_model(model)
    onnx.save(model, out_path)
    print(f"wrote {out_path}: {len(nodes)} nodes, {sum(i.ByteSize() for i in inits)} bytes of weights")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "testdata/demo_detector.onnx")

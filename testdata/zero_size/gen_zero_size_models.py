#!/usr/bin/python3
"""Writes the reproducers of issue 54 (zero-size tensors), committed beside this script.

  conv_net.onnx      a small classifier like PP-OCR's cls (Conv, BatchNormalization, Relu,
                     MaxPool, GlobalAveragePool, Flatten, Gemm, Softmax) over x[N, 3, 48, 192]
                     with a symbolic batch: `--input-shape x:0x3x48x192` pins it to 0
  mul_broadcast.onnx Mul(x[0, 3, 4], w[1, 3, 1]): a 0 dim against a broadcast 1, which divided
                     by 0 in the executor's broadcast plan (SIGFPE)
  calib/s0.x.npy     a calibration sample of shape [0, 3, 48, 192] for conv_net.onnx

Run with Debian's python3-onnx: /usr/bin/python3 testdata/zero_size/gen_zero_size_models.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = [helper.make_opsetid("", 13)]


def save(name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name.split(".")[0], inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="gen_zero_size_models")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def init(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def conv_net():
    rng = np.random.default_rng(54)
    inits = [
        init("w", rng.standard_normal((8, 3, 3, 3)) * 0.2),
        init("b", rng.standard_normal(8) * 0.1),
        init("scale", rng.uniform(0.5, 1.5, 8)),
        init("shift", rng.standard_normal(8) * 0.1),
        init("mean", rng.standard_normal(8) * 0.1),
        init("var", rng.uniform(0.5, 1.5, 8)),
        init("fc_w", rng.standard_normal((8, 2)) * 0.3),
        init("fc_b", np.zeros(2)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["bn"],
                         name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 48, 192])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])
    save("conv_net.onnx", nodes, [x], [y], inits)


def mul_broadcast():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [0, 3, 4])
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"], name="mul")]
    save("mul_broadcast.onnx", nodes, [x], [y], [init("w", [[[1.0], [2.0], [3.0]]])])


def calibration_sample():
    os.makedirs(os.path.join(HERE, "calib"), exist_ok=True)
    np.save(os.path.join(HERE, "calib", "s0.x.npy"), np.zeros((0, 3, 48, 192), np.float32))


if __name__ == "__main__":
    conv_net()
    mul_broadcast()
    calibration_sample()

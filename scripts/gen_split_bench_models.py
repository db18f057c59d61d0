#!/usr/bin/python3
"""Generates the two models scripts/bench/bench_split.sh times `porttool split` on.

  big.onnx + big.data   400 MatMul+activation layers of 1024x1024 fp32 weights in one external
                        data file (1.6 GB); the activation of layer 200 is a com.microsoft Gelu
                        named Custom_GELU_0, the rest are Relu.
  many.onnx             50,000 small nodes (a unary chain on a [1,16] tensor with a residual Add
                        every 8 nodes); node 25,000 is a Gelu named Custom_GELU_0.

Weights are streamed to the data file layer by layer, so the generator never holds 1.6 GB.
Run with Debian's python3-onnx: /usr/bin/python3 scripts/gen_split_bench_models.py OUT_DIR
[--layers N] [--nodes N]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

DIM = 1024
OPSETS = [helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)]


def external_weight(name, data_file, location, rng):
    array = rng.standard_normal((DIM, DIM), dtype=np.float32) * np.float32(DIM ** -0.5)
    offset = data_file.tell()
    data_file.write(array.tobytes())
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[DIM, DIM])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", array.nbytes)):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)
    return tensor


def activation(layer, middle, x, y):
    if layer == middle:
        return helper.make_node("Gelu", [x], [y], name="Custom_GELU_0", domain="com.microsoft")
    return helper.make_node("Relu", [x], [y], name=f"layer{layer}/Relu")


def big_model(out_dir, layers):
    rng = np.random.default_rng(1)
    nodes, inits, x = [], [], "x"
    with open(os.path.join(out_dir, "big.data"), "wb") as data:
        for i in range(layers):
            inits.append(external_weight(f"w{i}", data, "big.data", rng))
            nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"], name=f"layer{i}/MatMul"))
            nodes.append(activation(i, layers // 2, f"mm{i}", f"act{i}"))
            x = f"act{i}"
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, DIM])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, DIM])], initializer=inits)
    model = helper.make_model(graph, opset_imports=OPSETS, producer_name="gen_split_bench_models")
    with open(os.path.join(out_dir, "big.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def many_model(out_dir, count):
    unary = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Softsign", "Exp", "Log"]
    nodes, x, anchor = [], "x", "x"
    for i in range(count):
        y = f"t{i}"
        if i == count // 2:
            nodes.append(helper.make_node("Gelu", [x], [y], name="Custom_GELU_0", domain="com.microsoft"))
        elif i % 8 == 7:
            nodes.append(helper.make_node("Add", [x, anchor], [y], name=f"n{i}/Add"))
            anchor = y
        else:
            op = unary[i % 8]
            nodes.append(helper.make_node(op, [x], [y], name=f"n{i}/{op}"))
        x = y
    graph = helper.make_graph(nodes, "many", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 16])])
    model = helper.make_model(graph, opset_imports=OPSETS, producer_name="gen_split_bench_models")
    onnx.save(model, os.path.join(out_dir, "many.onnx"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--nodes", type=int, default=50000)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    big_model(args.out_dir, args.layers)
    many_model(args.out_dir, args.nodes)
    print(f"wrote {args.out_dir}/big.onnx (+ big.data, {args.layers} layers) and many.onnx ({args.nodes} nodes)")


if __name__ == "__main__":
    main()

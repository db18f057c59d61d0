#!/usr/bin/python3
"""Generate a large MLP model for the foundation benchmark (python onnx 1.12 + numpy).

    gen_large_model.py OUT.onnx [--size-mb 1536] [--external]

LAYERS MatMul+Relu layers of 1024x1024 float32 weights (4 MiB each) plus a Reshape whose target
shape is a small int64 initializer (so data propagation is exercised). With --external the
weights go to OUT.onnx.data (one file, 64-byte aligned) and the model stays a few KB; without it
every weight is inline raw_data. Both variants hold identical weights.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

DIM = 1024


def weight(i):
    rng = np.random.default_rng(i)
    return (rng.standard_normal((DIM, DIM), dtype=np.float32) * 0.03).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=int, default=1536)
    ap.add_argument("--external", action="store_true")
    args = ap.parse_args()
    layers = max(1, args.size_mb * 1024 * 1024 // (DIM * DIM * 4))

    nodes, inits = [], []
    prev = "x"
    data_name = os.path.basename(args.out) + ".data"
    data = open(os.path.join(os.path.dirname(os.path.abspath(args.out)), data_name), "wb") \
        if args.external else None
    offset = 0
    for i in range(layers):
        w = weight(i)
        t = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[DIM, DIM])
        if data:
            pad = (-offset) % 64
            data.write(b"\0" * pad)
            offset += pad
            raw = w.tobytes()
            data.write(raw)
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", data_name), ("offset", str(offset)), ("length", str(len(raw)))):
                e = t.external_data.add()
                e.key, e.value = k, v
            offset += len(raw)
        else:
            t.raw_data = w.tobytes()
        inits.append(t)
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"mm{i}"], name=f"matmul_{i}"))
        nodes.append(helper.make_node("Relu", [f"mm{i}"], [f"relu{i}"], name=f"relu_{i}"))
        prev = f"relu{i}"
    if data:
        data.close()
    inits.append(helper.make_tensor("out_shape", TensorProto.INT64, [2], [-1, DIM // 2]))
    nodes.append(helper.make_node("Reshape", [prev, "out_shape"], ["y"], name="reshape_out"))
    graph = helper.make_graph(
        nodes, "large_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", DIM])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="gen_large_model.py")
    model.ir_version = 8
    with open(args.out, "wb") as f:
        f.write(model.SerializeToString())
    print(f"{args.out}: {layers} layers, {'external' if args.external else 'inline'} weights")


if __name__ == "__main__":
    main()

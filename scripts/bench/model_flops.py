#!/usr/bin/python3
"""Multiply-accumulates of a model's Conv/ConvTranspose/MatMul/Gemm at a pinned input shape.

Usage: model_flops.py MODEL INPUT 1x3x640x640  -> prints GFLOP (2 x MACs / 1e9) on one line.
Shapes come from onnx shape inference (python3-onnx), independent of porttool's own analysis.
"""
import sys

import onnx
from onnx import shape_inference


def dims(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def main():
    path, name, shape = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3].split("x")]
    model = onnx.load(path)
    for vi in model.graph.input:
        if vi.name == name:
            for d, v in zip(vi.type.tensor_type.shape.dim, shape):
                d.ClearField("dim_param")
                d.dim_value = v
    model = shape_inference.infer_shapes(model)
    shapes = {vi.name: dims(vi) for vi in
              list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    shapes.update({t.name: list(t.dims) for t in model.graph.initializer})
    macs = 0
    for n in model.graph.node:
        if n.op_type in ("Conv", "ConvTranspose"):
            # W is [C_out, C_in/g, k..] (Conv) or [C_in, C_out/g, k..] (ConvTranspose): each
            # output (Conv) or input (ConvTranspose) pixel of each W row costs prod(W[1:]) MACs.
            w = shapes[n.input[1]]
            per_out = 1
            for v in w[1:]:
                per_out *= v
            out = shapes.get(n.output[0]) if n.op_type == "Conv" else shapes.get(n.input[0])
            spatial = 1
            for v in out[2:]:
                spatial *= v
            macs += out[0] * w[0] * per_out * spatial
        elif n.op_type in ("MatMul", "Gemm"):
            a, b = shapes.get(n.input[0]), shapes.get(n.input[1])
            out = shapes.get(n.output[0])
            if not a or not b or not out:
                continue
            k = a[-1] if not (n.op_type == "Gemm" and any(x.name == "transA" and x.i for x in n.attribute)) else a[0]
            total = 1
            for v in out:
                total *= v
            macs += total * k
    print(f"{2 * macs / 1e9:.3f}")


if __name__ == "__main__":
    main()

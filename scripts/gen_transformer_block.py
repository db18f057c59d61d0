#!/usr/bin/python3
"""Writes one pre-LayerNorm transformer encoder block as ONNX (opset 17): the attention +
LayerNorm + MLP workload of ViT/BERT-style models, for the executor's threading benchmark
(scripts/bench/bench_executor.sh). The elementwise chains (bias Add, scale Mul, the Erf form of
GELU, residual Adds) are left unfused on purpose: they are what an exporter writes.

Usage: /usr/bin/python3 scripts/gen_transformer_block.py OUT.onnx [--seq 256] [--dim 384]
       [--heads 6] [--mlp 1536]
Input x: float32 [1, seq, dim]; output y: the same shape. Weights are random with a fixed seed.
"""
import argparse
import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Block:
    def __init__(self, seed=7):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []

    def weight(self, name, shape, scale):
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def const(self, name, value, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        return name

    def op(self, op_type, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attrs))
        return output

    def linear(self, x, name, din, dout):
        w = self.weight(name + "_w", [din, dout], 1 / math.sqrt(din))
        b = self.weight(name + "_b", [dout], 0.02)
        return self.op("Add", [self.op("MatMul", [x, w], name + "_mm"), b], name)

    def layer_norm(self, x, name, dim):
        scale = self.const(name + "_g", np.ones(dim))
        bias = self.const(name + "_b", np.zeros(dim))
        return self.op("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)

    def heads(self, x, name, seq, heads, perm):
        shape = self.const(name + "_shape", [1, seq, heads, -1], np.int64)
        return self.op("Transpose", [self.op("Reshape", [x, shape], name + "_r")], name, perm=perm)

    def attention(self, x, seq, dim, heads):
        qkv = self.linear(x, "qkv", dim, 3 * dim)
        split = self.const("qkv_split", [dim, dim, dim], np.int64)
        self.nodes.append(helper.make_node("Split", [qkv, split], ["q", "k", "v"], name="split",
                                           axis=2))
        q = self.heads("q", "q_heads", seq, heads, [0, 2, 1, 3])
        k = self.heads("k", "k_heads", seq, heads, [0, 2, 3, 1])
        v = self.heads("v", "v_heads", seq, heads, [0, 2, 1, 3])
        scale = self.const("attn_scale", 1 / math.sqrt(dim // heads))
        scores = self.op("Mul", [self.op("MatMul", [q, k], "qk"), scale], "scores")
        probs = self.op("Softmax", [scores], "probs", axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [probs, v], "ctx_heads")], "ctx_t",
                      perm=[0, 2, 1, 3])
        flat = self.const("ctx_shape", [1, seq, dim], np.int64)
        return self.linear(self.op("Reshape", [ctx, flat], "ctx"), "attn_out", dim, dim)

    def gelu(self, x):
        inv_sqrt2 = self.const("gelu_inv_sqrt2", 1 / math.sqrt(2))
        one, half = self.const("gelu_one", 1.0), self.const("gelu_half", 0.5)
        erf = self.op("Erf", [self.op("Mul", [x, inv_sqrt2], "gelu_scaled")], "gelu_erf")
        gate = self.op("Mul", [self.op("Add", [erf, one], "gelu_1p"), half], "gelu_gate")
        return self.op("Mul", [x, gate], "gelu")


def build(seq, dim, heads, mlp):
    b = Block()
    h = b.op("Add", ["x", b.attention(b.layer_norm("x", "ln1", dim), seq, dim, heads)], "h")
    up = b.gelu(b.linear(b.layer_norm(h, "ln2", dim), "mlp_up", dim, mlp))
    b.op("Add", [h, b.linear(up, "mlp_down", mlp, dim)], "y")
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, seq, dim]) for n in "xy"]
    graph = helper.make_graph(b.nodes, "transformer_block", [io[0]], [io[1]], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--mlp", type=int, default=1536)
    a = p.parse_args()
    if a.dim % a.heads:
        p.error(f"--dim {a.dim} is not a multiple of --heads {a.heads}")
    onnx.save(build(a.seq, a.dim, a.heads, a.mlp), a.out)


if __name__ == "__main__":
    main()

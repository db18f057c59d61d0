#!/usr/bin/python3
"""One-node models over the elementwise/activation op set, for scripts/bench/bench_opset.sh.

Usage: /usr/bin/python3 scripts/bench/gen_opset_models.py OUT_DIR [OPS]
  OPS: comma-separated op names to keep (default: all).

Writes OUT_DIR/<case>.onnx and, per graph input, OUT_DIR/<case>.<input>.npy, and prints one
manifest line per case, tab-separated: case, op, size label, model file, the dims of the graph
inputs (all inputs of a case share one shape: ort_bench.js feeds that shape to every input), and
the porttool --input arguments.

Every graph input is float32 of the case's shape; second operands that broadcast (a [1,C,1,1]
tensor, a scalar, PRelu's per-channel slope, Pow's exponent, Clip's bounds) and Where's bool
condition are initializers. porttool reads the .npy inputs: uniform in [-1, 1) so that
sign-dependent ops (LeakyRelu, Elu, Relu, ...) take both branches, and in [0.01, 1) for ops with
a domain (Sqrt, Pow 0.5, Log). ONNX Runtime draws its own inputs in [0, 1) (ort_bench.js); its
kernels are branch-free, so their time does not depend on the sign.
"""
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
KEEP = None  # op names to generate (None: all)
SIZES = {  # label -> NCHW
    "64x56x56": (1, 64, 56, 56),
    "256x14x14": (1, 256, 14, 14),
    "64x112x112": (1, 64, 112, 112),
}


def make_case(out_dir, case, op, size, n_inputs, attrs=None, inits=(), positive=False,
              outputs_dtype=TensorProto.FLOAT, init_first=False):
    """n_inputs float graph inputs of `size`, then `inits` (name, array) as extra operands."""
    if KEEP is not None and op not in KEEP:
        return None
    shape = list(size)
    inputs = [f"x{i}" for i in range(n_inputs)]
    graph_inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in inputs]
    init_names = [name for name, _ in inits]
    node_inputs = init_names + inputs if init_first else inputs + init_names
    node = helper.make_node(op, node_inputs, ["y"], **(attrs or {}))
    # A Shape node first, whose output is a second graph output: porttool's profile times a node
    # from the previous node's end, so the first node also carries the run's input checks (a NaN
    # scan of every input); Shape takes them here. ORT folds it away (static shapes).
    shape_node = helper.make_node("Shape", [inputs[0]], ["x_shape"])
    graph = helper.make_graph(
        [shape_node, node], case, graph_inputs,
        [helper.make_tensor_value_info("y", outputs_dtype, None),
         helper.make_tensor_value_info("x_shape", TensorProto.INT64, [len(shape)])],
        initializer=[numpy_helper.from_array(arr, name) for name, arr in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    path = os.path.join(out_dir, case + ".onnx")
    onnx.save(model, path)
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    pt_args = []
    for name in inputs:
        lo = 0.01 if positive else -1.0
        arr = rng.uniform(lo, 1.0, size=shape).astype(np.float32)
        npy = os.path.join(out_dir, f"{case}.{name}.npy")
        np.save(npy, arr)
        pt_args.append(f"--input {name}={npy}")
    return (case, op, "x".join(map(str, size[1:])), path, ",".join(map(str, shape)),
            " ".join(pt_args))


def cases(out_dir):
    rng = np.random.default_rng(7)
    f32 = np.float32
    out = []
    main, small, big = SIZES["64x56x56"], SIZES["256x14x14"], SIZES["64x112x112"]
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min"]:
        for label, size in (("64x56x56", main), ("256x14x14", small), ("64x112x112", big)):
            out.append(make_case(out_dir, f"{op}_{label}", op, size, 2))
        c = main[1]
        chan = rng.uniform(0.5, 1.5, size=(1, c, 1, 1)).astype(f32)
        out.append(make_case(out_dir, f"{op}_bcastC", op, main, 1, inits=[("b", chan)]))
        out.append(make_case(out_dir, f"{op}_scalar", op, main, 1,
                             inits=[("b", np.array(1.5, dtype=f32))]))
    for label, size in (("64x56x56", main), ("64x112x112", big)):
        out.append(make_case(out_dir, f"Sum3_{label}", "Sum", size, 3))
        cond = rng.uniform(size=size) < 0.5
        out.append(make_case(out_dir, f"Where_{label}", "Where", size, 2,
                             inits=[("cond", cond)], init_first=True))
        for e in (2.0, 0.5):
            out.append(make_case(out_dir, f"Pow{e:g}_{label}", "Pow", size, 1,
                                 inits=[("e", np.array(e, dtype=f32))], positive=True))
        slope = rng.uniform(0.0, 0.3, size=(size[1], 1, 1)).astype(f32)
        out.append(make_case(out_dir, f"PRelu_{label}", "PRelu", size, 1, inits=[("slope", slope)]))
    unary = [
        ("LeakyRelu", {"alpha": 0.1}, False),
        ("Elu", {"alpha": 1.0}, False),
        ("Selu", {}, False),
        ("Celu", {"alpha": 1.0}, False),
        ("HardSigmoid", {}, False),
        ("HardSwish", {}, False),
        ("Sigmoid", {}, False),
        ("Tanh", {}, False),
        ("Relu", {}, False),
        ("Softplus", {}, False),
        ("Softsign", {}, False),
        ("Erf", {}, False),
        ("Exp", {}, False),
        ("Log", {}, True),
        ("Sqrt", {}, True),
        ("Reciprocal", {}, True),
        ("Abs", {}, False),
        ("Neg", {}, False),
    ]
    for label, size in (("64x56x56", main), ("256x14x14", small), ("64x112x112", big)):
        for op, attrs, positive in unary:
            out.append(make_case(out_dir, f"{op}_{label}", op, size, 1, attrs=attrs,
                                 positive=positive))
        out.append(make_case(out_dir, f"Clip_{label}", "Clip", size, 1,
                             inits=[("lo", np.array(0.0, dtype=f32)),
                                    ("hi", np.array(6.0, dtype=f32))]))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    global KEEP
    KEEP = set(sys.argv[2].split(",")) if len(sys.argv) > 2 and sys.argv[2] else None
    os.makedirs(out_dir, exist_ok=True)
    for row in cases(out_dir):
        if row is not None:
            print("\t".join(row))


if __name__ == "__main__":
    main()

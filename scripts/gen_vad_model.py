#!/usr/bin/python3
"""Writes a small voice-activity detector shaped like Silero VAD (issue 48 item 3): the `If`
structure that makes such models fail on NPUs unless the sample rate is known.

Inputs: input float32 [1, 512] (one audio chunk), sr int64 scalar (the sample rate), h and c
float32 [1, 1, 32] (the LSTM state). Outputs: output [1, 1] (speech probability), hn, cn.

    If(sr == 16000)                       an input's value decides the path
      then (16 kHz):
        If(Shape(input)[1] == 512)        decided by a shape: constant once the shape is static
          then: reflect Pad by a constant 32 each side
          else: Pad by amounts computed from the length (a dynamic shape)
        STFT as a strided Conv (window 64, hop 32), magnitude, Conv encoder, mean over time
        If(Not(Size(h) == 0))             the state given, or a reset (a Size/Equal/Not chain)
          then: LSTM from h, c            h, c captured from two scopes up
          else: LSTM from a zero state
        decoder MatMul + Sigmoid
      else (8 kHz): frames of Div(sr, 250) samples (a value-dependent Reshape: no static shape
        unless sr is known), MatMul spectrum, Conv encoder, LSTM, decoder

Both branches of the outer If and of the state If use the same tensor names (mag, enc, feat,
lstm_h...), and the 16 kHz branch defines `feat` which is also an outer tensor name's prefix:
inlining must rename every name produced inside a branch. The STFT and encoder weights are
initializers of the branches themselves; the LSTM and decoder weights are main-graph initializers
that the branches capture.

Usage: /usr/bin/python3 scripts/gen_vad_model.py OUT.onnx
Random weights, fixed seed; opset 16.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 32
CHUNK = 512
rng = np.random.default_rng(48)


def tensor(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def weights(name, shape, scale):
    return tensor(name, rng.standard_normal(shape) * scale)


def const(name, value, dtype=np.int64):
    return helper.make_node("Constant", [], [name], name=name, value=tensor(name, value, dtype))


def node(op, inputs, outputs, name, **attrs):
    return helper.make_node(op, inputs, outputs if isinstance(outputs, list) else [outputs],
                            name=name, **attrs)


def float_info(name, shape=None):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def state_if(prefix, seq):
    """If(Not(Size(h) == 0)): LSTM from the given state, or from zeros (h and c are captured)."""
    given = helper.make_graph(
        [node("LSTM", [seq, "lstm_W", "lstm_R", "lstm_B", "", "h", "c"],
              ["", "lstm_h", "lstm_c"], "lstm_given", hidden_size=HIDDEN)],
        "state_given", [], [float_info("lstm_h"), float_info("lstm_c")])
    reset = helper.make_graph(
        [node("LSTM", [seq, "lstm_W", "lstm_R", "lstm_B"], ["", "lstm_h", "lstm_c"],
              "lstm_reset", hidden_size=HIDDEN)],
        "state_reset", [], [float_info("lstm_h"), float_info("lstm_c")])
    return [
        node("Size", ["h"], f"{prefix}h_size", f"{prefix}h_size"),
        const(f"{prefix}zero", 0),
        node("Equal", [f"{prefix}h_size", f"{prefix}zero"], f"{prefix}h_empty",
             f"{prefix}h_empty"),
        node("Not", [f"{prefix}h_empty"], f"{prefix}h_given", f"{prefix}h_given"),
        node("If", [f"{prefix}h_given"], [f"{prefix}hn", f"{prefix}cn"], f"{prefix}state_if",
             then_branch=given, else_branch=reset),
    ]


def decoder(prefix, lstm_h):
    return [
        const(f"{prefix}axis0", [0]),
        node("Squeeze", [lstm_h, f"{prefix}axis0"], f"{prefix}last", f"{prefix}last"),
        node("MatMul", [f"{prefix}last", "dec_W"], f"{prefix}logit0", f"{prefix}logit0"),
        node("Add", [f"{prefix}logit0", "dec_b"], f"{prefix}logit", f"{prefix}logit"),
        node("Sigmoid", [f"{prefix}logit"], "prob", f"{prefix}prob"),
    ]


def encoder_tail(mag, conv_w, conv_b):
    return [
        node("Conv", [mag, conv_w, conv_b], "enc0", "enc_conv", kernel_shape=[3], pads=[1, 1]),
        node("Relu", ["enc0"], "enc", "enc_relu"),
        node("ReduceMean", ["enc"], "feat", "feat_mean", axes=[2], keepdims=0),
        const("seq_axis", [0]),
        node("Unsqueeze", ["feat", "seq_axis"], "seq", "seq"),
    ]


def padding_if():
    """If(Shape(input)[1] == 512): a constant reflect pad, else pads computed from the length."""
    fixed = helper.make_graph(
        [const("pads", [0, 0, 32, 0, 0, 32]),
         node("Pad", ["x3", "pads"], "padded", "pad_fixed", mode="reflect")],
        "chunk_512", [], [float_info("padded")])
    # Pad to a multiple of the hop: 32 + (-(n mod 32) mod 32) on the right.
    any_length = helper.make_graph(
        [const("hop", 32), const("left", [0, 0, 32, 0, 0]),
         node("Mod", ["n", "hop"], "rem", "rem"),
         node("Sub", ["hop", "rem"], "fill0", "fill0"),
         node("Mod", ["fill0", "hop"], "fill", "fill"),
         node("Add", ["fill", "hop"], "right", "right"),
         const("right_axis", [0]),
         node("Unsqueeze", ["right", "right_axis"], "right1", "right1"),
         node("Concat", ["left", "right1"], "pads", "pads_concat", axis=0),
         node("Pad", ["x3", "pads"], "padded", "pad_any", mode="reflect")],
        "chunk_any", [], [float_info("padded")])
    return [
        node("Shape", ["input"], "in_shape", "in_shape"),
        const("one", 1),
        node("Gather", ["in_shape", "one"], "n", "n", axis=0),
        const("chunk", CHUNK),
        node("Equal", ["n", "chunk"], "is_chunk", "is_chunk"),
        const("ch_axis", [1]),
        node("Unsqueeze", ["input", "ch_axis"], "x3", "x3"),
        node("If", ["is_chunk"], ["padded"], "pad_if", then_branch=fixed, else_branch=any_length),
    ]


def branch_16k():
    window, hop, bins = 64, 32, 33
    t = np.arange(window)
    k = np.arange(bins)[:, None]
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * t / window)
    basis = np.concatenate([np.cos(2 * np.pi * k * t / window) * hann,
                            -np.sin(2 * np.pi * k * t / window) * hann])[:, None, :]
    nodes = padding_if() + [
        node("Conv", ["padded", "stft_basis"], "stft", "stft", kernel_shape=[window],
             strides=[hop]),
        const("re_start", [0]), const("re_end", [bins]), const("im_end", [2 * bins]),
        const("bin_axis", [1]),
        node("Slice", ["stft", "re_start", "re_end", "bin_axis"], "re", "re"),
        node("Slice", ["stft", "re_end", "im_end", "bin_axis"], "im", "im"),
        node("Mul", ["re", "re"], "re2", "re2"),
        node("Mul", ["im", "im"], "im2", "im2"),
        node("Add", ["re2", "im2"], "power", "power"),
        node("Sqrt", ["power"], "mag", "mag"),
    ] + encoder_tail("mag", "enc_W", "enc_b") + state_if("s16_", "seq") + decoder("d16_", "s16_hn")
    inits = [tensor("stft_basis", basis), weights("enc_W", [HIDDEN, bins, 3], 0.05),
             weights("enc_b", [HIDDEN], 0.05)]
    nodes += [node("Identity", ["s16_hn"], "hn_out", "hn_out"),
              node("Identity", ["s16_cn"], "cn_out", "cn_out")]
    return helper.make_graph(nodes, "vad_16k", [], [float_info("prob"), float_info("hn_out"),
                                                     float_info("cn_out")], inits)


def branch_8k():
    bins = 17
    nodes = [
        const("samples_per_frame", 250),
        node("Div", ["sr", "samples_per_frame"], "window", "window"),
        const("lead", [1, -1]), const("w_axis", [0]),
        node("Unsqueeze", ["window", "w_axis"], "window1", "window1"),
        node("Concat", ["lead", "window1"], "frame_shape", "frame_shape", axis=0),
        node("Reshape", ["input", "frame_shape"], "frames", "frames"),
        node("MatMul", ["frames", "dft8k"], "spec", "spec"),
        node("Abs", ["spec"], "spec_abs", "spec_abs"),
        node("Transpose", ["spec_abs"], "mag", "mag_t", perm=[0, 2, 1]),
    ] + encoder_tail("mag", "enc8_W", "enc8_b") + state_if("s8_", "seq") + decoder("d8_", "s8_hn")
    nodes += [node("Identity", ["s8_hn"], "hn_out", "hn_out"),
              node("Identity", ["s8_cn"], "cn_out", "cn_out")]
    inits = [weights("dft8k", [32, bins], 0.2), weights("enc8_W", [HIDDEN, bins, 3], 0.05),
             weights("enc8_b", [HIDDEN], 0.05)]
    return helper.make_graph(nodes, "vad_8k", [], [float_info("prob"), float_info("hn_out"),
                                                    float_info("cn_out")], inits)


def build():
    inits = [weights("lstm_W", [1, 4 * HIDDEN, HIDDEN], 0.2),
             weights("lstm_R", [1, 4 * HIDDEN, HIDDEN], 0.2),
             weights("lstm_B", [1, 8 * HIDDEN], 0.05),
             weights("dec_W", [HIDDEN, 1], 0.3), weights("dec_b", [1], 0.1)]
    nodes = [const("rate16k", 16000),
             node("Equal", ["sr", "rate16k"], "is16k", "is16k"),
             node("If", ["is16k"], ["output", "hn", "cn"], "sr_if", then_branch=branch_16k(),
                  else_branch=branch_8k())]
    state = [1, 1, HIDDEN]
    graph = helper.make_graph(
        nodes, "vad",
        [float_info("input", [1, CHUNK]), helper.make_tensor_value_info("sr", TensorProto.INT64, []),
         float_info("h", state), float_info("c", state)],
        [float_info("output", [1, 1]), float_info("hn", state), float_info("cn", state)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)],
                              producer_name="porttool scripts/gen_vad_model.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    args = parser.parse_args()
    onnx.save(build(), args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Converts the accelerator segments of this porttool bundle to .rknn files with RKNN-Toolkit2.

Written by `porttool port` for target {{target|py_string}}: rknn-toolkit2 {{toolkit_version|py_string}},
target_platform '{{platform|py_string}}'. Run it on the PC where the toolkit is installed (x86-64 Linux,
pip package rknn-toolkit2=={{toolkit_version|py_string}}), from any directory:

    python3 rknn/convert.py                     # every accelerator segment
    python3 rknn/convert.py --normalize-in-app  # see README.md, "Where the input is normalised"

Each segment becomes segments/<segment>.rknn beside its .onnx, where runner/rknn loads it.
Scratch files (derived dataset lists, the toolkit's hybrid-quantization files) go to rknn/build/.

Every option below is what porttool did, in the toolkit's words; where the toolkit has no exact
equivalent the comment says what differs. The values come from the target profile's
"vendor_tool" section, the options from the documents its "sources" list (API Reference and
User Guide V{{toolkit_version|py_string}}).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLE = os.path.dirname(HERE)
BUILD = os.path.join(HERE, 'build')

TOOLKIT_VERSION = '{{toolkit_version|py_string}}'
TARGET_PLATFORM = '{{platform|py_string}}'
# What unquantized layers compute in (config float_dtype); None: the NPU has no float.
FLOAT_DTYPE = {{float_dtype}}
# True: porttool calibrated, the toolkit quantizes to int8 on the same samples; False: a float
# port, converted without quantization.
QUANTIZE = {{quantize}}
# porttool's calibration: method, per-channel weight scales, zero-point-0 activations.
CALIBRATION = {{calibration}}
# The precision the toolkit's hybrid quantization gives the layers porttool kept 'float' or
# raised to 'int16' (the profile's vendor_tool.raised_precision).
RAISED_PRECISION = {{raised_precision}}
# Per accelerator segment: its files (bundle-relative), its graph inputs and outputs, its
# dataset list (rknn/-relative), the inputs porttool built from image pixels (with the
# toolkit's mean_values/std_values for them) and the output tensors of the nodes porttool kept
# float or raised to int16.
SEGMENTS = {{segments}}

# porttool's calibration method -> config(quantized_algorithm=...). The toolkit offers 'normal'
# (each tensor's min/max), 'mmse' (the range minimising the mean squared quantization error) and
# 'kl_divergence' (the range minimising the KL divergence between the float and quantized
# histograms):
#   minmax     -> normal: the same rule.
#   entropy    -> kl_divergence: the same criterion; the histogram bins and search grid differ.
#   mse        -> mmse: the same criterion; the search differs.
#   percentile -> mmse: the toolkit has no percentile clipping. Both clip rare outliers so that
#                 the bulk of the values keeps its resolution; mmse places the clip where the
#                 error is least instead of at a fixed share of the values, so the ranges differ
#                 (and it calibrates slower).
QUANTIZED_ALGORITHM = {
    'minmax': 'normal',
    'entropy': 'kl_divergence',
    'mse': 'mmse',
    'percentile': 'mmse',
}


def fail(message):
    sys.exit('convert.py: ' + message)


def check(ret, what):
    if ret != 0:
        fail('%s failed (it returned %r); the toolkit printed why above' % (what, ret))


def config_args(seg, normalize_on_npu):
    args = {'target_platform': TARGET_PLATFORM}
    if FLOAT_DTYPE:
        args['float_dtype'] = FLOAT_DTYPE
    if QUANTIZE:
        # int8 weights and activations. The toolkit's int8 activations are asymmetric: it has
        # no zero-point-0 option, so porttool's symmetric activations (when chosen) are not
        # carried over.
        args['quantized_dtype'] = 'w8a8'
        args['quantized_algorithm'] = QUANTIZED_ALGORITHM[CALIBRATION['method']]
        # A weight scale per output channel ('channel') or one per tensor ('layer').
        args['quantized_method'] = 'channel' if CALIBRATION['per_channel'] else 'layer'
    if seg['pixel_inputs'] and normalize_on_npu:
        args['mean_values'], args['std_values'] = mean_std(seg)
    return args


def mean_std(seg):
    """Per input, in load_onnx's order: the pixel normalisation porttool applied, identity for
    the inputs that are not pixels."""
    means, stds = [], []
    for name, dims in zip(seg['inputs'], seg['input_size_list']):
        pixel = seg['pixel_inputs'].get(name)
        if pixel:
            means.append(pixel['mean_values'])
            stds.append(pixel['std_values'])
        else:
            channels = dims[1] if len(dims) == 4 else 1
            means.append([0.0] * channels)
            stds.append([1.0] * channels)
    return means, stds


def read_lines(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def normalized_copy(path, pixel, seg):
    """The sample as the model's own input, (pixels - mean_value) / std_value: what porttool
    calibrated on, for a .rknn that takes the normalised tensor."""
    import numpy as np
    raw = np.load(path)
    shape = [1] * raw.ndim
    shape[pixel['channel_axis']] = -1
    mean = np.array(pixel['mean_values'], dtype=np.float32).reshape(shape)
    std = np.array(pixel['std_values'], dtype=np.float32).reshape(shape)
    out_dir = os.path.join(BUILD, seg['name'])
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, os.path.basename(path))
    np.save(out, ((raw - mean) / std).astype(np.float32))
    return out


def dataset_for(seg, normalize_on_npu):
    """The segment's dataset list for build()/hybrid_quantization_step1(): one line per sample,
    its inputs' .npy files space-separated in load_onnx's input order. Written to rknn/build/
    with paths relative to it (the working directory), so that a path with spaces above the
    bundle cannot split a line."""
    lines = read_lines(os.path.join(HERE, seg['dataset']))
    if not lines:
        fail('%s lists no samples' % seg['dataset'])
    out = []
    for number, line in enumerate(lines, 1):
        files = line.split(' ')
        if len(files) != len(seg['inputs']):
            fail('%s line %d has %d file(s), the segment %d input(s)' %
                 (seg['dataset'], number, len(files), len(seg['inputs'])))
        paths = []
        for name, rel in zip(seg['inputs'], files):
            path = os.path.join(HERE, rel)
            if not os.path.isfile(path):
                fail('%s line %d: %s does not exist' % (seg['dataset'], number, rel))
            pixel = seg['pixel_inputs'].get(name)
            if pixel and not normalize_on_npu:
                path = normalized_copy(path, pixel, seg)
            paths.append(os.path.relpath(path, BUILD))
        out.append(' '.join(paths))
    listing = os.path.join(BUILD, seg['name'] + '.dataset.txt')
    with open(listing, 'w') as f:
        f.write('\n'.join(out) + '\n')
    return listing


def raised_layers(seg):
    """Output tensor -> the toolkit's dtype for the layers porttool did not leave at int8."""
    layers = {}
    for precision, key in (('int16', 'int16_outputs'), ('float', 'float_outputs')):
        for name in seg[key]:
            layers[name] = RAISED_PRECISION[precision]
    return layers


def cfg_layer_names(lines):
    """The layer (output tensor) names of step 1's quantize_parameters section."""
    names = set()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith('quantize_parameters:'))
    except StopIteration:
        return names
    indent = None
    for line in lines[start + 1:]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip(' '))
        if depth == 0:
            break
        if indent is None:
            indent = depth
        if depth == indent and line.rstrip().endswith(':'):
            key = line.strip()[:-1]
            if key.startswith('"'):
                key = json.loads(key)
            elif key.startswith("'"):
                key = key[1:-1].replace("''", "'")
            names.add(key)
    return names


def write_custom_layers(cfg, layers, allow_unmapped):
    """Adds `layers` to custom_quantize_layers of the .quantization.cfg that
    hybrid_quantization_step1 wrote (User Guide 6.3: a layer's output name and its dtype)."""
    with open(cfg) as f:
        lines = f.read().split('\n')
    known = cfg_layer_names(lines)
    unmapped = sorted(name for name in layers if name not in known)
    if unmapped:
        message = ('%d layer(s) porttool kept at higher precision have no name in the toolkit\'s '
                   'graph (it fused or renamed them): %s; see %s for the names it has' %
                   (len(unmapped), ', '.join(unmapped), cfg))
        if not allow_unmapped:
            fail(message + '. Add them by hand and run hybrid_quantization_step2, or pass '
                 '--allow-unmapped to quantize them to int8 (porttool\'s accuracy figures then '
                 'do not describe the .rknn)')
        print('convert.py: warning: ' + message, file=sys.stderr)
    try:
        at = next(i for i, line in enumerate(lines) if line.startswith('custom_quantize_layers:'))
    except StopIteration:
        fail('%s has no custom_quantize_layers section to fill' % cfg)
    rest = lines[at][len('custom_quantize_layers:'):].strip()
    if rest not in ('', '{}'):
        fail('%s: custom_quantize_layers is not an empty block (%s); edit it by hand' % (cfg, rest))
    entries = ['    %s: %s' % (json.dumps(name), dtype)
               for name, dtype in sorted(layers.items()) if name in known]
    lines[at:at + 1] = ['custom_quantize_layers:' + ('' if entries else ' {}')] + entries
    with open(cfg, 'w') as f:
        f.write('\n'.join(lines))
    return len(entries)


def convert(RKNN, seg, options):
    normalize_on_npu = not options.normalize_in_app
    model = os.path.join(BUNDLE, seg['onnx'])
    rknn = RKNN(verbose=options.verbose)
    rknn.config(**config_args(seg, normalize_on_npu))
    check(rknn.load_onnx(model=model, inputs=seg['inputs'], input_size_list=seg['input_size_list'],
                         outputs=seg['outputs']), 'load_onnx(%s)' % seg['onnx'])
    layers = raised_layers(seg) if QUANTIZE else {}
    if QUANTIZE and layers:
        # Hybrid quantization: step 1 quantizes and writes <model>.model/.data/.quantization.cfg
        # into the working directory, the cfg gets porttool's per-layer precisions, step 2 builds.
        check(rknn.hybrid_quantization_step1(dataset=dataset_for(seg, normalize_on_npu),
                                             proposal=False), 'hybrid_quantization_step1')
        rknn.release()
        base = os.path.splitext(os.path.basename(model))[0]
        for suffix in ('.model', '.data', '.quantization.cfg'):
            if not os.path.isfile(base + suffix):
                fail('hybrid_quantization_step1 wrote no %s in %s' % (base + suffix, BUILD))
        count = write_custom_layers(base + '.quantization.cfg', layers, options.allow_unmapped)
        print('convert.py: %s: %d layer(s) in custom_quantize_layers' % (seg['name'], count))
        rknn = RKNN(verbose=options.verbose)
        check(rknn.hybrid_quantization_step2(model_input=base + '.model', data_input=base + '.data',
                                             model_quantization_cfg=base + '.quantization.cfg'),
              'hybrid_quantization_step2')
    elif QUANTIZE:
        check(rknn.build(do_quantization=True, dataset=dataset_for(seg, normalize_on_npu)),
              'build')
    else:
        check(rknn.build(do_quantization=False), 'build')
    check(rknn.export_rknn(os.path.join(BUNDLE, seg['rknn'])), 'export_rknn(%s)' % seg['rknn'])
    rknn.release()
    print('convert.py: wrote %s' % seg['rknn'])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--normalize-in-app', action='store_true',
                        help='leave the pixel normalisation to the application: the .rknn takes '
                        'the model\'s own (normalised) input tensor, as runner/rknn feeds it')
    parser.add_argument('--allow-unmapped', action='store_true',
                        help='convert even when a layer porttool kept at higher precision has no '
                        'name in the toolkit\'s graph (it is then int8)')
    parser.add_argument('--verbose', action='store_true', help='the toolkit\'s verbose log')
    options = parser.parse_args()
    try:
        from rknn.api import RKNN
    except ImportError:
        fail('rknn-toolkit2 is not installed here: pip install rknn-toolkit2==%s (x86-64 Linux, '
             'Python 3.6-3.12)' % TOOLKIT_VERSION)
    try:
        from importlib.metadata import version
        installed = version('rknn-toolkit2')
    except Exception:
        installed = None
    if installed and installed.split('+')[0] != TOOLKIT_VERSION:
        print('convert.py: warning: rknn-toolkit2 %s is installed, these options are for %s' %
              (installed, TOOLKIT_VERSION), file=sys.stderr)
    os.makedirs(BUILD, exist_ok=True)
    os.chdir(BUILD)
    for seg in SEGMENTS:
        convert(RKNN, seg, options)


if __name__ == '__main__':
    main()

#!/bin/sh
# Builds a TensorRT engine for each accelerator segment of this porttool bundle with trtexec
# (TensorRT {{version|line_comment}}), for target {{target|line_comment}}. Run it on the Jetson itself: an engine is
# specific to the GPU and the TensorRT version that built it. See tensorrt/README.md.
set -eu
cd "$(dirname "$0")/.."
command -v trtexec >/dev/null 2>&1 || PATH="$PATH:/usr/src/tensorrt/bin"
{{commands}}
#!/bin/sh
# Generates the network C library of each segment of this porttool bundle with ST Edge AI Core
# {{version|line_comment}} (stedgeai, or X-CUBE-AI's copy of it), for target {{target|line_comment}}. See stedgeai/README.md.
set -eu
cd "$(dirname "$0")/.."
{{commands}}
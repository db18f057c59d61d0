#!/bin/sh
# Generates the network C library of each segment of this porttool bundle with ST Edge AI Core
# {{version}} (stedgeai, or X-CUBE-AI's copy of it), for target {{target}}. See stedgeai/README.md.
set -eu
cd "$(dirname "$0")/.."
{{commands}}
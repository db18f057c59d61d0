#!/usr/bin/env bash
# The README's test command: install dependencies, build, run every test suite under ctest.
# Tests that need ../shared/models skip with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --ort
scripts/build.sh
cd build && ctest --output-on-failure -j"$(nproc)"

#!/usr/bin/env bash
# Runs every kit under KITS_DIR in ONNX Runtime (npm onnxruntime-node via scripts/ort_run.js) on
# its test_data_set_0 inputs and judges the outputs with `porttool kit --check` (each kit.json's
# tolerance, the same numbers kit.h gives the C test program). Kits whose op
# ONNX Runtime lacks are listed, not failed.
#   scripts/check_kits_ort.sh KITS_DIR [OUT_DIR]
#   e.g. build/porttool kit ../shared/models/ch_PP-OCRv4_det_infer.onnx --all \
#          --input-shape x:1x3x640x640 -o /tmp/kits && scripts/check_kits_ort.sh /tmp/kits
set -euo pipefail
cd "$(dirname "$0")/.."
KITS=${1:?usage: scripts/check_kits_ort.sh KITS_DIR [OUT_DIR]}
OUT=${2:-$(mktemp -d "${TMPDIR:-/tmp}/kits-ort.XXXXXX")}
mkdir -p "$OUT"
PT=${PORTTOOL:-build/porttool}
ran=0 unsupported=()
for kit in "$KITS"/*/; do
  kit=${kit%/}
  name=$(basename "$kit")
  args=()
  i=0
  for input in $(node -e 'for (const t of require(process.argv[1]).inputs) console.log(t.name)' \
      "$(realpath "$kit/kit.json")"); do
    args+=(--input "$input=$kit/test_data_set_0/input_$i.pb")
    i=$((i + 1))
  done
  if node scripts/ort_run.js "$kit/model.onnx" "${args[@]}" --output-dir "$OUT/$name" \
      >/dev/null 2>"$OUT/$name.err"; then
    ran=$((ran + 1))
  else
    unsupported+=("$name: $(head -c 200 "$OUT/$name.err" | tr '\n' ' ')")
  fi
done
echo "ONNX Runtime ran $ran kit(s); could not run ${#unsupported[@]}"
for u in "${unsupported[@]+"${unsupported[@]}"}"; do echo "  not run: $u"; done
$PT kit --check "$KITS" "$OUT" | tail -n 1

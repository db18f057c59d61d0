#!/usr/bin/env bash
# `porttool port` on every shared model (../shared/models) for every shipped target, as a user
# would run it (no calibration data: the float port), and a check that every verdict matches its
# gates: "ready" (exit 0) only when no gate that decides it fails or went unevaluated, "not-ready"
# (exit 1) with the failing gate named, "failed" (exit 2/3/4) with an error naming the step and no
# verdict at all. Prints one line per run and a summary; exits 1 on any mismatch.
#   scripts/bench/port_matrix.sh [PORTTOOL] [MODELS_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
PT=${1:-build/porttool}
MODELS=${2:-../shared/models}
[ -x "$PT" ] || { echo "port_matrix: no $PT (scripts/build.sh)" >&2; exit 2; }
[ -d "$MODELS" ] || { echo "port_matrix: skipped: no $MODELS" >&2; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/porttool-matrix.XXXXXX")
trap 'rm -rf "$work"' EXIT

# model file, input pin
cases=(
  "ch_PP-OCRv4_det_infer.onnx x:1x3x640x640"
  "ch_PP-OCRv4_rec_infer.onnx x:1x3x48x320"
  "ch_ppocr_mobile_v2.0_cls_infer.onnx x:1x3x48x192"
  "hey_jarvis_v0.1.onnx x.1:1x16x96"
  "melspectrogram.onnx input:1x16000"
  "ultraface_RFB-320.onnx input:1x3x240x320"
  "mlsd_320_large.onnx input_image_with_alpha:0:1x320x320x4"
  "blazeface_back_256.onnx input:0:1x256x256x3"
)
mismatches=0 runs=0
printf '%-36s %-16s %4s %-10s %s\n' model target exit status gates
for c in "${cases[@]}"; do
  read -r file pin <<<"$c"
  for profile in rules/targets/*.json; do
    target=$(basename "$profile" .json)
    out="$work/$target.$file.port"
    rc=0
    "$PT" -q port "$MODELS/$file" --target "$target" --input-shape "$pin" -o "$out" --json \
      >"$work/out.json" 2>"$work/err.txt" || rc=$?
    runs=$((runs + 1))
    line=$(python3 - "$work/out.json" "$rc" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
status = doc.get("status")
problems = []
if status == "failed":
    if "verdict" in doc or "gates" in doc: problems.append("a failed run with a verdict")
    if rc not in (2, 3, 4): problems.append(f"failed with exit {rc}")
    err = doc.get("error", {})
    if not err.get("step") or not err.get("message"): problems.append("no step/message")
    gates = "error at " + err.get("step", "?") + ": " + err.get("message", "")[:80]
else:
    blocking = [g["id"] for g in doc["gates"]
                if g["status"] == "fail" or (g["status"] == "not evaluated" and g["blocking"])]
    want = "ready" if not blocking else "not-ready"
    if status != want: problems.append(f"status {status}, gates say {want}")
    if rc != (0 if status == "ready" else 1): problems.append(f"{status} with exit {rc}")
    if status == "ready" and any(g["status"] == "fail" for g in doc["gates"]):
        problems.append("ready with a failing gate")
    gates = " ".join(f'{g["id"]}={g["status"].replace(" ", "-")}' for g in doc["gates"])
print(("MISMATCH " + "; ".join(problems) + " | " if problems else "") + f"{status}|{gates}")
EOF
)
    case $line in MISMATCH*) mismatches=$((mismatches + 1)) ;; esac
    printf '%-36s %-16s %4s %-10s %s\n' "$file" "$target" "$rc" "${line%%|*}" "${line#*|}"
    rm -rf "$out"
  done
done
echo "port_matrix: $runs runs, $mismatches verdict(s) that do not match their gates"
[ "$mismatches" -eq 0 ]

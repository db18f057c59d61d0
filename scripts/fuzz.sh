#!/usr/bin/env bash
# Runs every libFuzzer target (tools/fuzz/fuzz_*.cc) for SECONDS each, one after the other (the
# machines this runs on have 2 cores: targets run together would each get a fraction of one), at
# nice $FUZZ_NICE (default 10), and keeps every crashing, leaking, hanging or out-of-memory input
# in testdata/fuzz-regressions/<target>/, which the normal build replays under ctest
# (porttool_fuzz_regressions).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     default 60 s, every target
# Each target is (re)built just before it runs, so a fix made while earlier targets ran is in.
# Per target: build-fuzz/logs/<target>.log (libFuzzer's output, final stats included) and one
# line in build-fuzz/logs/summary.txt (executions, cov, ft, seconds, findings).
# Needs clang-14 and libclang-rt-14-dev (scripts/setup.sh --fuzz). Builds build-fuzz/ with
# AddressSanitizer + UndefinedBehaviorSanitizer. Seeds: testdata/fuzz-corpus/ (committed, small),
# the libonnx-testdata node-test models and tensors, the real models of ../shared/models up to
# 2 MB, the rules/ JSON files, the hostile models of scripts/gen_hostile_models.py and the kept
# regressions. The model targets mutate structure (tools/fuzz/model_mutator.h);
# PORTTOOL_FUZZ_BYTES_ONLY=1 turns that off, and FUZZ_CORPUS=DIR picks another corpus folder
# (default build-fuzz/corpus), so the two can be compared from the same seeds. The growing corpus lives in
# build-fuzz/corpus/ (not committed). Prints executions, coverage and findings per target.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
NICE=${FUZZ_NICE:-10}
TAG=${FUZZ_TAG:+.$FUZZ_TAG}  # FUZZ_TAG=x: logs/<target>.x.log and "<target>.x" in the summary
scripts/setup.sh --fuzz

B=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DPORTTOOL_FUZZ=ON -DPORTTOOL_SANITIZE=ON -DPORTTOOL_TESTS=OFF >/dev/null
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in tools/fuzz/fuzz_*.cc; do targets+=("$(basename "$f" .cc)"); done
fi

# ---- seeds ----
NODE=/usr/share/libonnx-testdata/data/node
seeds=$B/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{models,tensors,json}
cp testdata/fuzz-corpus/models/* testdata/*.onnx "$seeds/models/" 2>/dev/null || true
/usr/bin/python3 scripts/gen_hostile_models.py "$seeds/models" >/dev/null 2>&1 || true
if [ -d $NODE ]; then
  for d in $NODE/*/; do cp "$d/model.onnx" "$seeds/models/$(basename "$d").onnx" 2>/dev/null || true; done
  # One input tensor of every 4th node test keeps the tensor seeds varied but small.
  ls -d $NODE/*/ | awk 'NR % 4 == 0' | while read -r d; do
    cp "$d/test_data_set_0/input_0.pb" "$seeds/tensors/$(basename "$d").pb" 2>/dev/null || true
  done
fi
cp testdata/fuzz-corpus/tensors/* "$seeds/tensors/" 2>/dev/null || true
# The real models of ../shared/models up to 2 MB (PP-OCR cls, hey_jarvis, melspectrogram): real
# exporters' graphs, which the structure-aware mutator then bends. Larger ones slow every run.
if [ -d ../shared/models ]; then
  find ../shared/models -maxdepth 1 -name '*.onnx' -size -2M -exec cp {} "$seeds/models/" \;
fi
cp rules/decision/*.json rules/targets/*.json "$seeds/json/"

# Targets that read a selector byte (or two) before the payload get seeds with it prepended.
prefixed() {  # prefixed SRC_DIR DST_DIR PREFIX_BYTES...
  local src=$1 dst=$2
  shift 2
  mkdir -p "$dst"
  for f in "$src"/*; do
    for p in "$@"; do printf "\\x$p" | cat - "$f" >"$dst/$p-$(basename "$f")"; done
  done
}
seed_dir() {
  case $1 in
    fuzz_model_load | fuzz_check | fuzz_infer_shapes | fuzz_inspect) echo "$seeds/models" ;;
    fuzz_split) prefixed "$seeds/models" "$seeds/$1" 00 && prefixed "$seeds/$1" "$seeds/$1.2" 55 &&
      echo "$seeds/$1.2" ;;
    fuzz_passes) prefixed "$seeds/models" "$seeds/$1" 1f && echo "$seeds/$1" ;;
    fuzz_emit_header) prefixed "$seeds/models" "$seeds/$1" 00 01 && echo "$seeds/$1" ;;
    fuzz_tensor_readers) prefixed "$seeds/tensors" "$seeds/$1" 00 01 && echo "$seeds/$1" ;;
    fuzz_json_loaders) prefixed "$seeds/json" "$seeds/$1" 00 01 02 03 && echo "$seeds/$1" ;;
    *) echo "" ;;  # fuzz_executor builds its model from the bytes: no seeds needed
  esac
}

# ---- run, one target at a time ----
mkdir -p $B/logs
summary=$B/logs/summary.txt
printf '%-22s %12s %8s %8s %8s %9s\n' target executions cov ft seconds findings | tee -a $summary
for t in "${targets[@]}"; do
  nice -n "$NICE" cmake --build $B -j2 --target "$t" >"$B/logs/$t.build.log" 2>&1 ||
    { echo "$t: build failed, see $B/logs/$t.build.log" | tee -a $summary; continue; }
  corpus=$(realpath -m "${FUZZ_CORPUS:-$B/corpus}/$t")
  artifacts=$B/artifacts/$t
  regress=testdata/fuzz-regressions/$t
  mkdir -p "$corpus" "$artifacts" "$regress"
  extra=$(seed_dir "$t")
  # -fork keeps fuzzing after a finding so every target gets its full time; findings land in
  # the artifact directory. Small-memory limits: refusing huge allocations is what is tested.
  t0=$(date +%s)
  (cd $B && nice -n "$NICE" "./$t" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -dict=../tools/fuzz/onnx.dict -artifact_prefix="artifacts/$t/" -print_final_stats=1 \
    "$corpus" ${extra:+"../$extra"} "../$regress" >"logs/$t$TAG.log" 2>&1) || true
  secs=$(($(date +%s) - t0))
  kept=0
  for f in "$artifacts"/*; do
    [ -f "$f" ] || continue
    cp "$f" "$regress/$(basename "$f")"
    kept=$((kept + 1))
  done
  # Fork mode's progress lines: "#N: cov: C ft: F corp: ... oom/timeout/crash: a/b/c time: ...".
  last=$(grep -E '^#[0-9]+' "$B/logs/$t$TAG.log" | tail -1 || true)
  execs=$(echo "$last" | sed -nE 's/^#([0-9]+).*/\1/p')
  cov=$(echo "$last" | sed -nE 's/.*cov: ([0-9]+).*/\1/p')
  ft=$(echo "$last" | sed -nE 's/.*ft: ([0-9]+).*/\1/p')
  printf '%-22s %12s %8s %8s %8s %9s\n' "$t$TAG" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$secs" "$kept" |
    tee -a $summary
done
echo "logs: $B/logs/  kept inputs: testdata/fuzz-regressions/<target>/"

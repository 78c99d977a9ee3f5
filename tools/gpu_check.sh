#!/usr/bin/env bash
# On a machine with a CUDA GPU and only this repository: set up, run the GPU tests (tests/gpu, marker gpu) and the
# GPU benchmark, and print a summary -- in under 8 minutes, each step under its own time budget:
#   setup 150 s (./dev.sh setup: venv, pinned wheels, the C++ core; no browser), tests 240 s (four pytest processes
#   in parallel: kernel builds and nvcc dominate), benchmark 90 s (benchmarks/bench_gpu.py).
# Usage: tools/gpu_check.sh [LOG_DIR]   (logs of each step go to LOG_DIR, default gpu_check_logs/)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LOGS=${1:-gpu_check_logs}
mkdir -p "$LOGS"
PY=${TIRX_LAYOUT_VENV:-.venv}/bin/python
SETUP_S=150 TESTS_S=240 BENCH_S=90
declare -a SUMMARY
start=$(date +%s)

step() {  # step NAME BUDGET_S COMMAND...: run COMMAND under the budget, log it, record status and seconds
  local name=$1 budget=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout --kill-after=10 "$budget" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  local took=$(($(date +%s) - t0)) verdict="ok"
  [ $rc -eq 124 ] && verdict="TIMED OUT after ${budget}s" || { [ $rc -ne 0 ] && verdict="FAILED (exit $rc)"; }
  SUMMARY+=("$(printf '%-10s %-28s %4ss (budget %ss), log %s' "$name" "$verdict" "$took" "$budget" "$LOGS/$name.log")")
  return $rc
}

echo "gpu_check: setting up (log: $LOGS/setup.log)"
if ! TIRX_LAYOUT_NO_BROWSER=1 step setup "$SETUP_S" ./dev.sh setup; then
  printf '%s\n' "${SUMMARY[@]}"
  tail -20 "$LOGS/setup.log"
  exit 1
fi
# TVM compiles each kernel's CUDA when it is loaded: with nvcc, or NVRTC from cuda-bindings (TVM's "cuda" extra)
if ! "$PY" -c 'from tirx_layout.tools.device import cuda_compiler; cuda_compiler()' >/dev/null 2>&1; then
  echo "gpu_check: no nvcc; installing cuda-bindings for NVRTC (apache-tvm[cuda])"
  "$PY" -m pip install --quiet "apache-tvm[cuda]==0.27.0.post1" >>"$LOGS/setup.log" 2>&1 || true
fi
"$PY" -c 'from tirx_layout.tools.device import cuda_compiler
try:
    print("gpu_check: CUDA compiler:", cuda_compiler())
except RuntimeError as err:
    print("gpu_check: CUDA compiler: none --", err)' | tee "$LOGS/compiler.log"
"$PY" -c 'import tvm; d = tvm.cuda(0); print("gpu_check: device:", d.device_name if d.exist else "none (tvm.cuda(0).exist is False)", d.compute_version if d.exist else "")' | tee "$LOGS/device.log"

echo "gpu_check: tests/gpu (logs: $LOGS/tests-*.log)"
shard() {  # shard NAME PYTEST-ARGS...: one pytest process over part of tests/gpu
  local name=$1
  shift
  "$PY" -m pytest tests/gpu -m gpu -q -p no:cacheprovider "$@" >"$LOGS/tests-$name.log" 2>&1
}
run_tests() {
  local pids=() rc=0
  shard values -k "test_copies and equals_numpy" &
  pids+=($!)
  shard counts -k "test_copies and once" &
  pids+=($!)
  shard gemm -k "test_gemm" &
  pids+=($!)
  shard tma-smem -k "test_tma or test_shared_memory" &
  pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  return $rc
}
export -f shard
export PY LOGS
step tests "$TESTS_S" bash -c "$(declare -f run_tests); run_tests"
tests_rc=$?

echo "gpu_check: benchmarks/bench_gpu.py (log: $LOGS/bench.log)"
step bench "$BENCH_S" "$PY" benchmarks/bench_gpu.py

echo
echo "== gpu_check summary ($(($(date +%s) - start)) s in all) =="
cat "$LOGS/device.log" "$LOGS/compiler.log"
printf '%s\n' "${SUMMARY[@]}"
for log in "$LOGS"/tests-*.log; do
  printf '  %-22s %s\n' "$(basename "$log" .log)" "$(grep -E '^[0-9]+ (passed|failed|skipped|error)|(passed|failed|skipped|error).* in [0-9.]+s' "$log" | tail -1)"
  grep -E '^(FAILED|ERROR) ' "$log" | head -20 | sed 's/^/    /'
done
echo "-- benchmark --"
cat "$LOGS/bench.log"
[ $tests_rc -eq 0 ]

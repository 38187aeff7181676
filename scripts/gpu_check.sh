#!/usr/bin/env bash
# The one prepared check for a lent GPU (an H200), planned so that the Hopper kernels get time even when other things
# fail (issue 25):
#   1. preflight (scripts/gpu_preflight.py, ~30 s): device, driver, every toolchain piece's version, one tiny launch
#      per path, an sm_90a module JIT-loaded with its explicit target and as a ptxas cubin, a cluster launch, a
#      driver-encoded tensor map, the shared-memory opt-in and setmaxnreg; one JSON line per check;
#   2. the GPU tests, each module in its own pytest process with its own limit (Hopper modules first; no -x; no
#      DeepSeek-V3-sized parametrisations: -k "not dsv3");
#   3. compare grouped_gemm_fp8 at `small` (every rung of the ladder), then the tiny preset (every kernel and path);
#   4. `ptxmoe calibrate`: the under-load clock, the timing model's microbenchmarks, the paired variants' ratios and
#      the paired rows' variants (a device profile, rewritten after each phase: a cut-short step keeps what it had);
#   5. compute-sanitizer memcheck, racecheck and synccheck on tiny rows of every path, when it is installed;
#   6. an ncu profile of a few tiny rows, when ncu is installed.
# Every step runs in its own process with its own time limit (also capped by the whole check's deadline,
# GPU_CHECK_TOTAL, default 420 s, grace included); a step that fails or runs out of time is logged and the next one
# runs; results are published to $OUT after every step. No DeepSeek-V3 GEMM or layer row runs (minutes of host work
# drawing 7.5-11 G weight elements).
#
#   scripts/gpu_check.sh                 results under profiles/gpu-check-<UTC stamp>/
#   OUT=/some/dir scripts/gpu_check.sh   also published to $OUT after EVERY step and on exit: gpu_check.log,
#                                        preflight.jsonl, calibrate.tar.gz, sanitize.tar.gz, one <run-folder>.tar.gz
#                                        per run folder (at most 4)
#   GPU_CHECK_PRINT_PLAN=1 scripts/gpu_check.sh   prints the steps in order with their limits, the total, and exits
#
# Knobs: GPU_CHECK_KERNELS (tiny compare; default every kernel), GPU_CHECK_SANITIZE_KERNELS, GPU_CHECK_NCU_KERNELS,
# GPU_CHECK_BUDGET (seconds of sampling per row, default 0.2), GPU_CHECK_TOTAL, GPU_CHECK_PYTHON, GPU_CHECK_SITE.
set -uo pipefail
cd "$(dirname "$0")/.."

# --- the plan: "step:limit" in run order; with GRACE per step (timeout's --kill-after) they add up to <= TOTAL -------
GRACE=2
PYTEST_MODULES=(  # Hopper first: the driver-built tensor map, then rungs 5/4, 3, 2, the ladder's registry row
  tests/harness/test_tensormaps.py:10
  tests/ptx_impl/test_gemm_fp8_r45_gpu.py:20
  tests/ptx_impl/test_gemm_fp8_r3_gpu.py:10
  tests/ptx_impl/test_gemm_fp8_r2_gpu.py:10
  tests/ptx_impl/test_grouped_gemm_fp8_gpu.py:10
  tests/ptx_impl/test_ptx_gpu.py:12
  tests/harness/test_backends_gpu.py:8
  tests/cpp_impl/test_cpp_gpu.py:12
  tests/cpp_impl/test_cpp_grouped_gemm.py:8
  tests/cuda_impl/test_gpu.py:12
  tests/ptx_impl/test_grouped_gemm.py:8
  tests/harness/partition/test_partition_gpu.py:8
  tests/ptxmoe/test_ptxmoe_compare.py:8
  tests/ptxsim/test_wmma.py:6
)
PLAN=(setup:10 preflight:40)
for m in "${PYTEST_MODULES[@]}"; do PLAN+=("pytest:$m"); done
PLAN+=(compare-fp8-small:45 compare-tiny:35 calibrate:25 sanitize-memcheck:19 sanitize-racecheck:19 sanitize-synccheck:19
      ncu:16)
limit_of() {  # limit_of STEP: the seconds after the step's last colon
  echo "${1##*:}"
}
plan_limit() {  # plan_limit KEY: the limit of the plan's step KEY (the part before its last colon)
  local s
  for s in "${PLAN[@]}"; do [ "${s%:*}" = "$1" ] && { limit_of "$s"; return 0; }; done
  echo 0
}
TOTAL=${GPU_CHECK_TOTAL:-420}
PLANNED=0
for s in "${PLAN[@]}"; do PLANNED=$((PLANNED + $(limit_of "$s") + GRACE)); done
if [ -n "${GPU_CHECK_PRINT_PLAN:-}" ]; then
  for s in "${PLAN[@]}"; do echo "step ${s%:*} $(limit_of "$s")"; done
  echo "grace=$GRACE steps=${#PLAN[@]} planned=$PLANNED total=$TOTAL"
  exit 0
fi

START=$(date +%s)
DEADLINE=$((START + TOTAL))
PROFILES=profiles/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$PROFILES/sanitize" "$PROFILES/calibrate"
LOG="$PROFILES/gpu_check.log"
exec > >(tee -a "$LOG") 2>&1
export PYTHONUNBUFFERED=1
KERNELS=${GPU_CHECK_KERNELS:-gate,align,permute,act_quant,swiglu,combine,grouped_gemm,grouped_gemm_fp8,layer}
SANITIZE_KERNELS=${GPU_CHECK_SANITIZE_KERNELS:-gate,permute,act_quant,grouped_gemm_fp8}
NCU_KERNELS=${GPU_CHECK_NCU_KERNELS:-gate,grouped_gemm_fp8}
BUDGET=${GPU_CHECK_BUDGET:-0.2}
STATUS=()

publish() {  # the log, preflight.jsonl, calibrate.tar.gz, sanitize.tar.gz, up to 4 run-folder tars (flat, <= 8 files)
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT" || return 0
  local n=0 run name tmp
  for run in "$PROFILES"/*/; do
    [ -f "$run/run.json" ] && [ $n -lt 4 ] || continue
    name=$(basename "$run" | tr -c 'A-Za-z0-9._\n-' '_')
    tmp="$PROFILES/.$name.tar.gz.part"  # NOTE: never a partial file in $OUT (it would take one of the 8 slots)
    tar -czf "$tmp" -C "$PROFILES" "$(basename "$run")" 2>/dev/null
    if [ "$(stat -c %s "$tmp" 2>/dev/null || echo 0)" -ge 16000000 ]; then  # too big: run.json and rows only
      tar -czf "$tmp" -C "$PROFILES" --exclude='*.ncu-rep' --exclude='*.nsys-rep' "$(basename "$run")" 2>/dev/null
    fi
    mv -f "$tmp" "$OUT/$name.tar.gz"
    n=$((n + 1))
  done
  for dir in sanitize calibrate; do
    if [ -n "$(ls -A "$PROFILES/$dir" 2>/dev/null)" ]; then
      tar -czf "$PROFILES/.$dir.part" -C "$PROFILES" "$dir" 2>/dev/null \
        && mv -f "$PROFILES/.$dir.part" "$OUT/$dir.tar.gz"
    fi
  done
  if [ -f "$PROFILES/preflight.jsonl" ]; then
    cp -f "$PROFILES/preflight.jsonl" "$PROFILES/.preflight.part" && mv -f "$PROFILES/.preflight.part" \
      "$OUT/preflight.jsonl"
  fi
  cp -f "$LOG" "$PROFILES/.log.part" 2>/dev/null && mv -f "$PROFILES/.log.part" "$OUT/gpu_check.log"
}

finish() {
  echo "=== summary after $(($(date +%s) - START))s (plan ${PLANNED}s of ${TOTAL}s)"
  printf '  %s\n' "${STATUS[@]+"${STATUS[@]}"}"
  sleep 0.3  # let tee write the last lines to the log before it is copied
  publish
}
trap finish EXIT
trap 'echo "=== interrupted"; exit 130' INT TERM

step() {  # step NAME LIMIT CMD...: run with min(LIMIT, time left) seconds, record the outcome, publish
  local name=$1 limit=$2 left
  shift 2
  left=$((DEADLINE - $(date +%s) - GRACE))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    STATUS+=("$name: skipped (no time left)")
    echo "=== $name: skipped, no time left"
    return 0
  fi
  echo "=== [$(($(date +%s) - START))s] $name (limit ${limit}s): $*"
  timeout --signal=INT --kill-after="$GRACE" "$limit" "$@"
  local rc=$?
  STATUS+=("$name: rc=$rc$([ $rc -eq 124 ] && echo ' (timed out)')")
  echo "=== $name: rc=$rc"
  publish
  return 0
}

# --- environment: python3 there (no .venv, no PyPI); carried wheels from .whl/ go into $SITE -----------------------
PY=${GPU_CHECK_PYTHON:-python3}
SITE=${GPU_CHECK_SITE:-/tmp/site}
install_wheels() {
  local whl
  for whl in .whl/*.whl; do  # one by one: a wheel for another Python must not stop the others
    "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$whl" \
      || echo "=== WARNING: installing $whl failed (nvtx ranges/dashboards/ncu import may be missing)"
  done
}
if compgen -G ".whl/*.whl" >/dev/null; then
  echo "=== installing carried wheels into $SITE: $(cd .whl && echo *.whl)"
  export -f install_wheels
  export PY SITE
  step "install wheels" "$(plan_limit setup)" bash -c install_wheels
else
  echo "=== no .whl/ wheels carried (run scripts/fetch_gpu_wheels.sh here and name .whl in carry)"
fi
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PTXMOE_ALLOW_SYSTEM_CUDA=1
# a kernel still running after this long ends its row as hung (sticky: the compare stops there, saved) instead of
# eating its step's whole limit
export PTXMOE_GPU_SYNC_TIMEOUT=${PTXMOE_GPU_SYNC_TIMEOUT:-15}
# NOTE: numba-cuda finds libNVVM through CUDA_HOME when no nvidia-cuda-nvcc wheel is installed
if [ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ]; then export CUDA_HOME=/usr/local/cuda; fi
export PATH="$PATH${CUDA_HOME:+:$CUDA_HOME/bin}"
echo "=== python: $(command -v "$PY") PYTHONPATH=$PYTHONPATH CUDA_HOME=${CUDA_HOME:-}"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "=== no GPU visible (nvidia-smi missing or found no device): skipping the GPU steps"
  STATUS+=("no GPU visible: GPU steps skipped")
  exit 0
fi
nvidia-smi -L || true

# --- 1. preflight: every feature tried on a tiny kernel, one JSON line each ----------------------------------------
step "preflight" "$(plan_limit preflight)" "$PY" scripts/gpu_preflight.py --out "$PROFILES/preflight.jsonl"

# --- 2. GPU tests: one process per module, tiny and ragged sizes only --------------------------------------------
PYTEST_ARGS=(-q -m gpu -k "not dsv3" -p no:cacheprovider -rfE)
if timeout 30 "$PY" -c "import pytest_timeout" 2>/dev/null; then PYTEST_ARGS+=(--timeout=60); fi
for m in "${PYTEST_MODULES[@]}"; do
  step "pytest ${m%:*}" "$(plan_limit "pytest:${m%:*}")" "$PY" -m pytest "${PYTEST_ARGS[@]}" "${m%:*}"
done

# --- 3. compare: grouped_gemm_fp8 at small with every rung (the Hopper ladder), then tiny, every kernel and path --
compare() {  # compare STEP LIMIT PRESET KERNELS
  step "$1" "$2" "$PY" -m harness.cli compare --backend gpu --preset "$3" --kernels "$4" --skew balanced \
    --out "$PROFILES" --budget "$BUDGET" --no-model-estimate --no-static --no-dashboard
}
compare "compare grouped_gemm_fp8 small" "$(plan_limit compare-fp8-small)" small grouped_gemm_fp8
compare "compare tiny" "$(plan_limit compare-tiny)" tiny "$KERNELS"

# --- 4. calibrate: microbenchmarks and paired variants -> a device profile (with the ratios) -------------------------
step "calibrate" "$(plan_limit calibrate)" "$PY" -m harness.cli calibrate --repeat 5 \
  --out "$PROFILES/calibrate/device-profile.json" --save-measurements "$PROFILES/calibrate/measured.json"

# --- 5. compute-sanitizer on tiny rows of every path (ptxsim's sanitizers give the same rows here: docs) -----------
SANITIZER=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
if [ -x "$SANITIZER" ]; then
  for tool in memcheck racecheck synccheck; do
    step "sanitize $tool" "$(plan_limit "sanitize-$tool")" "$SANITIZER" --tool "$tool" --print-limit 50 \
      --log-file "$PROFILES/sanitize/$tool.log" "$PY" -m harness.cli compare --backend gpu --preset tiny \
      --kernels "$SANITIZE_KERNELS" --skew balanced --out "$PROFILES/sanitize" --quick-timing --no-model-estimate \
      --no-static --no-dashboard
    tail -3 "$PROFILES/sanitize/$tool.log" 2>/dev/null
  done
else
  STATUS+=("compute-sanitizer: not installed, sanitizer steps skipped")
fi

# --- 6. ncu: the first launch of each launch configuration of a few tiny rows, if ncu is installed ----------------
if command -v ncu >/dev/null || "$PY" -c "from harness.nsight.tools import find_tool; find_tool('ncu')" 2>/dev/null; then
  NCU_LOG="$PROFILES/ncu_step.log"
  step "profile ncu tiny" "$(plan_limit ncu)" bash -c '"$0" -m harness.cli profile --tool ncu --backend gpu \
    --preset tiny --skew balanced --kernels "$1" --out "$2" --no-static 2>&1 | tee "$3"; exit "${PIPESTATUS[0]}"' \
    "$PY" "$NCU_KERNELS" "$PROFILES" "$NCU_LOG"
  if grep -q "Failed to initialize the profiler\|ERR_NVGPUCTRPERM" "$NCU_LOG" 2>/dev/null; then
    echo "=== ncu cannot read the performance counters here (gVisor, or no counter permission): profile skipped"
    STATUS+=("ncu: counters unreadable here (see ncu_step.log), profile skipped")
  fi
else
  STATUS+=("ncu: not installed, profile skipped")
fi
exit 0

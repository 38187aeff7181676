#!/usr/bin/env bash
# The one prepared check for a lent GPU (an H200): environment, GPU tests, compare on dsv3-decode and dsv3-prefill,
# an ncu profile of a few dsv3-decode kernels when ncu exists. Every step has its own time limit, also capped by the
# whole check's deadline (GPU_CHECK_TOTAL, default 420 s = 7 minutes, grace included), so a run ends within 7 minutes;
# a step that fails or runs out of time is reported and the script goes on. compare writes run.json after every
# row, so a timed-out compare still leaves its finished rows.
#
#   scripts/gpu_check.sh                 results under profiles/gpu-check-<UTC stamp>/
#   OUT=/some/dir scripts/gpu_check.sh   also published to $OUT after EVERY step and on exit (the log and one
#                                        <run-folder>.tar.gz per run folder: at most 8 files, flat, safe names)
#   GPU_CHECK_PRINT_PLAN=1 scripts/gpu_check.sh   prints the step limits and their total, then exits
#
# Knobs: GPU_CHECK_KERNELS (comma list for dsv3-decode; default every kernel, cheap ones first, then the GEMMs and
# the layer), GPU_CHECK_PREFILL_KERNELS (default the kernels without the 15 GB weights), GPU_CHECK_NCU_KERNELS,
# GPU_CHECK_BUDGET (seconds of sampling per row, default 0.3), GPU_CHECK_TOTAL, GPU_CHECK_PYTHON, GPU_CHECK_SITE.
set -uo pipefail
cd "$(dirname "$0")/.."

# --- the plan: step limits in seconds; with GRACE per step (timeout's --kill-after) they add up to <= TOTAL ---------
GRACE=5
SETUP_LIMIT=25     # installing the carried wheels
PYTEST_LIMIT=60    # pytest -m gpu
DECODE_LIMIT=140   # compare dsv3-decode
PREFILL_LIMIT=70   # compare dsv3-prefill (cheap kernels)
NCU_LIMIT=90       # profile --tool ncu
TOTAL=${GPU_CHECK_TOTAL:-420}
PLANNED=$((SETUP_LIMIT + PYTEST_LIMIT + DECODE_LIMIT + PREFILL_LIMIT + NCU_LIMIT + 5 * GRACE))
if [ -n "${GPU_CHECK_PRINT_PLAN:-}" ]; then
  echo "setup=$SETUP_LIMIT pytest=$PYTEST_LIMIT decode=$DECODE_LIMIT prefill=$PREFILL_LIMIT ncu=$NCU_LIMIT" \
       "grace=$GRACE steps=5 planned=$PLANNED total=$TOTAL"
  exit 0
fi

START=$(date +%s)
DEADLINE=$((START + TOTAL))
PROFILES=profiles/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$PROFILES"
LOG="$PROFILES/gpu_check.log"
exec > >(tee -a "$LOG") 2>&1
export PYTHONUNBUFFERED=1
KERNELS=${GPU_CHECK_KERNELS:-gate,align,permute,act_quant,swiglu,combine,grouped_gemm,layer}
PREFILL_KERNELS=${GPU_CHECK_PREFILL_KERNELS:-gate,align,permute,act_quant,swiglu,combine}
NCU_KERNELS=${GPU_CHECK_NCU_KERNELS:-gate,permute,act_quant}
BUDGET=${GPU_CHECK_BUDGET:-0.3}
STATUS=()

publish() {  # copy the log and every finished run folder to $OUT (flat; at most 7 tars + the log)
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT" || return 0
  local n=0 run name tmp
  for run in "$PROFILES"/*/; do
    [ -f "$run/run.json" ] && [ $n -lt 7 ] || continue
    name=$(basename "$run" | tr -c 'A-Za-z0-9._\n-' '_')
    tmp="$PROFILES/.$name.tar.gz.part"  # NOTE: never a partial file in $OUT (it would take one of the 8 slots)
    tar -czf "$tmp" -C "$PROFILES" "$(basename "$run")" 2>/dev/null
    if [ "$(stat -c %s "$tmp" 2>/dev/null || echo 0)" -ge 16000000 ]; then  # too big: run.json and rows only
      tar -czf "$tmp" -C "$PROFILES" --exclude='*.ncu-rep' --exclude='*.nsys-rep' "$(basename "$run")" 2>/dev/null
    fi
    mv -f "$tmp" "$OUT/$name.tar.gz"
    n=$((n + 1))
  done
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
  step "install wheels" "$SETUP_LIMIT" bash -c install_wheels
else
  echo "=== no .whl/ wheels carried (run scripts/fetch_gpu_wheels.sh here and name .whl in carry)"
fi
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PTXMOE_ALLOW_SYSTEM_CUDA=1
echo "=== python: $(command -v "$PY") PYTHONPATH=$PYTHONPATH"
"$PY" -c "import sys, numba, numpy; print(sys.version.split()[0], 'numba', numba.__version__, 'numpy', numpy.__version__)" \
  || echo "=== WARNING: numba/numpy not importable with $PY"
"$PY" -c "import nvtx; print('nvtx', nvtx.__file__)" 2>/dev/null || echo "=== WARNING: nvtx not importable"
command -v nvcc >/dev/null && nvcc --version | tail -2
command -v ncu >/dev/null && ncu --version | tail -1
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "=== no GPU visible (nvidia-smi missing or found no device): skipping the GPU steps"
  STATUS+=("no GPU visible: GPU steps skipped")
  exit 0
fi
nvidia-smi || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
"$PY" -c "from harness.toolchain import gpu_visible, ptxas_path, TOOL_SOURCES; print(gpu_visible()); \
print('ptxas', ptxas_path(), TOOL_SOURCES)" || true
publish

# --- GPU tests ------------------------------------------------------------------------------------------------------
step "pytest -m gpu" "$PYTEST_LIMIT" "$PY" -m pytest -q -m gpu tests -x -p no:cacheprovider

# --- the comparisons (no timing-model estimate: it simulates the kernels on the CPU) ---------------------------------
compare() {  # compare PRESET KERNELS LIMIT
  local args=(-m harness.cli compare --backend gpu --preset "$1" --skew balanced --out "$PROFILES" --budget "$BUDGET"
              --no-model-estimate --no-static)
  [ -n "$2" ] && args+=(--kernels "$2")
  step "compare $1" "$3" "$PY" "${args[@]}"
}
compare dsv3-decode "$KERNELS" "$DECODE_LIMIT"
compare dsv3-prefill "$PREFILL_KERNELS" "$PREFILL_LIMIT"

# --- ncu: the first launch of each launch configuration of a few cheap dsv3-decode rows, if ncu is installed -----
if command -v ncu >/dev/null || "$PY" -c "from harness.nsight.tools import find_tool; find_tool('ncu')" 2>/dev/null; then
  NCU_LOG="$PROFILES/ncu_step.log"
  step "profile ncu dsv3-decode" "$NCU_LIMIT" bash -c '"$0" -m harness.cli profile --tool ncu --backend gpu \
    --preset dsv3-decode --skew balanced --kernels "$1" --out "$2" --no-static 2>&1 | tee "$3"; exit "${PIPESTATUS[0]}"' \
    "$PY" "$NCU_KERNELS" "$PROFILES" "$NCU_LOG"
  if grep -q "Failed to initialize the profiler\|ERR_NVGPUCTRPERM" "$NCU_LOG" 2>/dev/null; then
    echo "=== ncu cannot read the performance counters here (gVisor, or no counter permission): profile skipped"
    STATUS+=("ncu: counters unreadable here (see ncu_step.log), profile skipped")
  fi
else
  STATUS+=("ncu: not installed, profile skipped")
fi
exit 0

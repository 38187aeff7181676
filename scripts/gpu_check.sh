#!/usr/bin/env bash
# The one prepared check for a lent GPU (an H200): environment, GPU tests, compare on dsv3-decode and dsv3-prefill,
# an ncu profile of one preset when ncu exists. Every step has its own time limit so the whole script ends within
# ~8 minutes; a step that fails or runs out of time is reported and the script goes on. compare writes run.json
# after every row, so a timed-out compare still leaves its finished rows.
#
#   scripts/gpu_check.sh                 results under profiles/
#   OUT=/some/dir scripts/gpu_check.sh   run folders and logs copied to $OUT (at most 8 files, 2 folders deep)
#
# Knobs: GPU_CHECK_KERNELS (comma list for dsv3-decode; default every kernel, cheap ones first, then the GEMMs and
# the layer), GPU_CHECK_PREFILL_KERNELS (default the kernels without the 15 GB weights: the GEMMs and the layer
# need minutes of host-side input generation and float64 reference checks at DeepSeek-V3 size),
# GPU_CHECK_BUDGET (seconds of sampling per row, default 0.5).
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
PROFILES=profiles/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$PROFILES"
LOG="$PROFILES/gpu_check.log"
exec > >(tee -a "$LOG") 2>&1
# rows are saved one by one, so a compare cut off by its time limit keeps the cheap kernels it ran first
KERNELS=${GPU_CHECK_KERNELS:-gate,align,permute,act_quant,swiglu,combine,grouped_gemm,layer}
PREFILL_KERNELS=${GPU_CHECK_PREFILL_KERNELS:-gate,align,permute,act_quant,swiglu,combine}
BUDGET=${GPU_CHECK_BUDGET:-0.5}
STATUS=()

step() {  # step NAME SECONDS CMD...: run with a time limit, record the outcome
  local name=$1 limit=$2
  shift 2
  echo "=== [$(($(date +%s) - START))s] $name (limit ${limit}s): $*"
  timeout --signal=INT --kill-after=15 "$limit" "$@"
  local rc=$?
  STATUS+=("$name: rc=$rc$([ $rc -eq 124 ] && echo ' (timed out)')")
  echo "=== $name: rc=$rc"
  return 0
}

# --- environment: reuse a working venv, else `make install` (needs PyPI), else the system python ------------------
PY=.venv/bin/python
if ! { [ -x "$PY" ] && "$PY" -c "import numba.cuda, harness, ptxsim" 2>/dev/null; }; then
  echo "=== no working .venv: trying make install"
  timeout 200 make install || true
  if ! { [ -x "$PY" ] && "$PY" -c "import numba.cuda, harness, ptxsim" 2>/dev/null; }; then
    PY=$(command -v python3)
    "$PY" -m pip install --quiet --no-deps -e . 2>/dev/null || true
  fi
fi
echo "=== python: $PY"
"$PY" -c "import sys, numba, numpy; print(sys.version.split()[0], 'numba', numba.__version__, 'numpy', numpy.__version__)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
"$PY" -m harness.cli list || true

# --- GPU tests ------------------------------------------------------------------------------------------------------
step "pytest -m gpu" 120 "$PY" -m pytest -q -m gpu tests -x -p no:cacheprovider

# --- the comparisons ------------------------------------------------------------------------------------------------
compare() {  # compare PRESET KERNELS LIMIT
  local args=(-m harness.cli compare --backend gpu --preset "$1" --skew balanced --out "$PROFILES" --budget "$BUDGET")
  [ -n "$2" ] && args+=(--kernels "$2")
  step "compare $1" "$3" "$PY" "${args[@]}"
}
compare dsv3-decode "$KERNELS" 200
compare dsv3-prefill "$PREFILL_KERNELS" 120

# --- ncu on one preset, if ncu is installed -------------------------------------------------------------------------
if "$PY" -c "from harness.nsight.tools import find_tool; find_tool('ncu')" 2>/dev/null; then
  step "profile ncu dsv3-decode" 90 "$PY" -m harness.cli profile --tool ncu --backend gpu --preset dsv3-decode \
    --kernels "${GPU_CHECK_NCU_KERNELS:-gate,permute,act_quant,grouped_gemm}" --out "$PROFILES" --no-static
else
  STATUS+=("ncu: not installed, profile skipped")
fi

echo "=== summary after $(($(date +%s) - START))s"
printf '  %s\n' "${STATUS[@]}"

# --- results to $OUT: each run folder's run.json (and one Nsight report), the log; 8 files at most ---------------
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  n=0
  for run in "$PROFILES"/*/; do
    [ -f "$run/run.json" ] || continue
    name=$(basename "$run" | tr -c 'A-Za-z0-9._\n-' '_')
    mkdir -p "$OUT/$name"
    cp "$run/run.json" "$OUT/$name/run.json" && n=$((n + 1))
    for rep in "$run"/nsight/*.ncu-rep "$run"/nsight/*.rows.json; do
      [ -f "$rep" ] && [ $n -lt 6 ] && [ "$(stat -c %s "$rep")" -lt 16000000 ] || continue
      mkdir -p "$OUT/$name/nsight" && cp "$rep" "$OUT/$name/nsight/" && n=$((n + 1))
    done
  done
  cp "$LOG" "$OUT/gpu_check.log"
  echo "=== copied $n result files and the log to $OUT"
fi

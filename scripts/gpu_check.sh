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

# --- environment: python3 there (no .venv, no PyPI); carried wheels from .whl/ go into /tmp/site ----------------
PY=${GPU_CHECK_PYTHON:-python3}
SITE=${GPU_CHECK_SITE:-/tmp/site}
if compgen -G ".whl/*.whl" >/dev/null; then
  echo "=== installing carried wheels into $SITE: $(cd .whl && echo *.whl)"
  for whl in .whl/*.whl; do  # one by one: a wheel for another Python must not stop the pure ones
    timeout 60 "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$whl" \
      || echo "=== WARNING: installing $whl failed (nvtx ranges/dashboards may be missing)"
  done
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
  echo "=== summary after $(($(date +%s) - START))s: no GPU"
  if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$LOG" "$OUT/gpu_check.log"; fi
  exit 0
fi
nvidia-smi || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
"$PY" -c "from harness.toolchain import gpu_visible, ptxas_path, TOOL_SOURCES; print(gpu_visible()); \
print('ptxas', ptxas_path(), TOOL_SOURCES)" || true
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

# --- ncu on one preset, if ncu is installed and can read counters (gVisor: "Failed to initialize the profiler") ---
if command -v ncu >/dev/null || "$PY" -c "from harness.nsight.tools import find_tool; find_tool('ncu')" 2>/dev/null; then
  NCU_LOG="$PROFILES/ncu_step.log"
  step "profile ncu dsv3-decode" 150 bash -c '"$0" -m harness.cli profile --tool ncu --backend gpu --preset dsv3-decode \
    --kernels "$1" --out "$2" --no-static 2>&1 | tee "$3"; exit "${PIPESTATUS[0]}"' \
    "$PY" "${GPU_CHECK_NCU_KERNELS:-gate,permute,act_quant,grouped_gemm}" "$PROFILES" "$NCU_LOG"
  if grep -q "Failed to initialize the profiler" "$NCU_LOG" 2>/dev/null; then
    echo "=== ncu cannot read counters on this runtime (gVisor?): profile skipped"
    STATUS+=("ncu: 'Failed to initialize the profiler' (counters unreadable here), profile skipped")
  fi
else
  STATUS+=("ncu: not installed, profile skipped")
fi

echo "=== summary after $(($(date +%s) - START))s"
printf '  %s\n' "${STATUS[@]}"

# --- results to $OUT: one tar.gz per run folder (<16 MiB each) and the log; 8 files at most -----------------------
# The run folders also stay under $PROFILES (profiles/ in the repository).
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  n=0
  for run in "$PROFILES"/*/; do
    [ -f "$run/run.json" ] && [ $n -lt 7 ] || continue
    name=$(basename "$run" | tr -c 'A-Za-z0-9._\n-' '_')
    tar -czf "$OUT/$name.tar.gz" -C "$PROFILES" "$(basename "$run")"
    if [ "$(stat -c %s "$OUT/$name.tar.gz")" -ge 16000000 ]; then  # too big: keep run.json and the rows only
      tar -czf "$OUT/$name.tar.gz" -C "$PROFILES" --exclude='*.ncu-rep' --exclude='*.nsys-rep' "$(basename "$run")"
      echo "=== $name: Nsight reports left out of the tar (over 16 MiB)"
    fi
    n=$((n + 1))
  done
  cp "$LOG" "$OUT/gpu_check.log"
  echo "=== copied $n run folders (tar.gz) and the log to $OUT"
fi
exit 0

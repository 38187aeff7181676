#!/usr/bin/env bash
# Run HERE (PyPI reachable): download into .whl/ the wheels the lent H200 machine lacks, for Python 3.12 x86-64
# (no deps; pinned from constraints.txt). gpu_check.sh installs them there with
# `pip install --no-index --no-deps --target /tmp/site .whl/*.whl`. .whl/ is git-ignored: name it in the call's carry.
# Plotly/narwhals are only needed for dashboards there (optional); nvtx makes the NVTX ranges visible to ncu.
# ncu_report (52 MiB unpacked) is not fetched: ptxmoe profile imports the copy under <ncu install>/extras/python.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(nvtx plotly narwhals)
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
mkdir -p .whl
specs=()
for p in "${PKGS[@]}"; do
  pin=$(grep -iE "^${p}==" constraints.txt | head -1 || true)
  specs+=("${pin:-$p}")
done
echo "fetching: ${specs[*]}"
"$PY" -m pip download --quiet --no-deps --dest .whl --only-binary=:all: \
  --python-version 3.12 --implementation cp --abi cp312 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 "${specs[@]}"
total=$(du -sm .whl | cut -f1)
ls -l .whl
echo "total ${total} MiB in .whl/"
if [ "$total" -ge 40 ]; then
  echo "ERROR: .whl/ is ${total} MiB, over the 40 MiB budget (the whole carried tree must stay under 64 MiB)" >&2
  exit 1
fi

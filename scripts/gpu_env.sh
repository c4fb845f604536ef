#   source scripts/gpu_env.sh        (from scripts/gpu.sh and scripts/gpu_check.sh)
#
# Sourced by scripts/gpu.sh and scripts/gpu_check.sh on the GPU machine (from the
# repository root): installs the carried wheels (.whl, from scripts/fetch_wheels.sh)
# into /tmp/site, puts tawac, ptxas and them on the paths, and prints the machine.
if ! ls .whl/*.whl >/dev/null 2>&1; then
  echo "$0: no wheels in .whl (run scripts/fetch_wheels.sh here and carry .whl)" >&2
  exit 2
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD"
export PATH="/usr/local/cuda/bin:/tmp/site/bin:$PATH"
export PYTHONUNBUFFERED=1
export TAWAC_CACHE_DIR="$PWD/.solver-cache"

logdir="${OUT:-/tmp/tawac-gpu}"
mkdir -p "$logdir"

echo "== machine"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true
ptxas --version | tail -n 1 || echo "ptxas: not found"

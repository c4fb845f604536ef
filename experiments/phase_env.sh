# Sourced by the warp-group phase experiments (experiments/exp_phase*.sh): the
# device's Python path and compile cache, and `traced NAME SIZE SOURCE OPTIONS...`, a
# `tawac run` whose trace goes to /tmp/NAME.json (its output to /tmp/NAME.log).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:/tmp/site/bin:$PATH TAWAC_CACHE_DIR=$PWD/.bench-cache
traced() {
  local name=$1 size=$2; shift 2
  timeout 120 python3 -m tawac.tools.cli run "$@" --size "$size" --trace-out "/tmp/$name.json" \
    > "/tmp/$name.log" 2>&1 || tail -3 "/tmp/$name.log"
}
# `phased NAME SIZE SOURCE OPTIONS...`: `traced` every 8th iteration, then the two
# consumer warp groups' phase (experiments/phase_offsets.py).
phased() {
  traced "$@" --trace-every 8
  echo "$1: $(python3 experiments/phase_offsets.py "/tmp/$1.json")"
}

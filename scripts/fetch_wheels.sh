#!/usr/bin/env bash
#   scripts/fetch_wheels.sh          (here, with network; then carry .whl to the GPU machine)
#
# Downloads into ./.whl (git-ignored) the wheels the GPU machine lacks, for its Python 3.12
# on manylinux x86_64: xdsl and its dependencies, filecheck and lit, OR-Tools and pandas,
# pytest-xdist.  The GPU machine
# already has click, rich, pytest, numpy and typing-extensions.  scripts/gpu.sh installs
# them there with `pip install --no-index --target /tmp/site .whl/*.whl`.
set -euo pipefail
cd "$(dirname "$0")/.."

# xdsl 0.74.0 requires immutabledict, ordered-set, typing-extensions (present there).
PACKAGES=(
  xdsl==0.74.0
  immutabledict==4.3.1
  ordered-set==4.1.0
  filecheck==1.0.6
  lit==18.1.8
  # the solver planner (--schedule solver): OR-Tools; its CP-SAT module imports pandas
  # (numpy is there); protobuf and absl are not imported by it
  ortools==9.15.6755
  pandas==2.2.3
  python-dateutil==2.9.0.post0
  six==1.17.0
  pytz==2025.2
  tzdata==2025.2
  # the suite's parallel workers (pyproject's addopts: -n auto)
  pytest-xdist==3.8.0
  execnet==2.1.1
)

mkdir -p .whl
for pkg in "${PACKAGES[@]}"; do
  name="${pkg%%==*}"
  if ls .whl/"$(echo "$name" | tr - _)"-"${pkg##*==}"-*.whl >/dev/null 2>&1; then
    continue
  fi
  if ! python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform any -d .whl "$pkg"; then
    # A pure-python package may only be reachable without the platform filters.
    python3 -m pip download -q --no-deps --only-binary=:all: -d .whl "$pkg"
  fi
done

# Show what the downloaded wheels require, to spot a missing dependency.
for w in .whl/*.whl; do
  reqs=$(unzip -p "$w" '*/METADATA' | grep '^Requires-Dist' | grep -v 'extra ==' \
    | sed 's/^Requires-Dist: //' | paste -sd ',' - || true)
  echo "$(basename "$w"): ${reqs:-no requirements}"
done

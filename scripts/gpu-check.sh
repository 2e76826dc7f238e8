#!/usr/bin/env bash
# Checks tensorjit on an NVIDIA GPU in one call: the [cuda] tests, the cuBLAS planning tests,
# tj-bench on the device and PyTorch on the same workloads, with logs and a side-by-side table
# in one folder.
#
#   scripts/gpu-check.sh build [BUILD]     on a machine with LLVM: a Release build with LLVM
#                                          linked into libtensorjit (-DTJ_LLVM_STATIC=ON), and
#                                          BUILD-pack/: the tools, tests and libraries it needs,
#                                          stripped (about 60 MB), to carry to a GPU machine
#   scripts/gpu-check.sh run [DIR] [OUT]   on the GPU machine, from the repository root; DIR is
#                                          a pack or a build folder (default build-gpu-pack)
#   scripts/gpu-check.sh [BUILD] [OUT]     both, on a machine with LLVM and a GPU
#
# BUILD defaults to build-gpu, OUT to $OUT or gpu-check. A run takes 2-4 minutes; each step
# has a time limit, so the whole stays under 5.
set -uo pipefail
cd "$(dirname "$0")/.."

mode=all
if [[ ${1:-} == build || ${1:-} == run ]]; then
  mode=$1
  shift
fi

build_it() {
  local build=$1 pack=$1-pack
  set -e
  bash scripts/setup.sh
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTJ_LLVM_STATIC=ON
  cmake --build "$build" -j2 --target tensorjit tj-tests tj-bench tjc
  if ldd "$build/libtensorjit.so" | grep -q libLLVM; then
    echo "gpu-check: libtensorjit.so still links libLLVM" >&2
    exit 1
  fi
  rm -rf "$pack"
  mkdir -p "$pack/bin" "$pack/lib"
  cp "$build/test/tj-tests" "$build/tj-bench" "$build/tjc" "$pack/bin/"
  cp -L "$build/libtensorjit.so.0" "$pack/lib/"
  # The libraries it links that a GPU machine may lack travel with it.
  for lib in $(ldd "$build/libtensorjit.so" |
    awk '/libfmt|lapack|blas|gfortran|quadmath|tmglib/ {print $3}'); do
    cp -L "$lib" "$pack/lib/"
  done
  strip --strip-unneeded "$pack"/bin/* "$pack"/lib/*
  du -sh "$pack"
  set +e
}

step() { # step NAME SECONDS COMMAND...: runs it with a limit, its output in OUT/NAME.txt
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*"
  timeout "$limit" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc" | tee -a "$out/status.txt"
  tail -n 3 "$out/$name.txt"
}

run_it() {
  local dir=$1 bin lib tests
  if [[ -x $dir/bin/tj-tests ]]; then # a pack
    bin=$dir/bin lib=$dir/lib tests=$dir/bin/tj-tests
  else # a build folder
    bin=$dir lib=$dir tests=$dir/test/tj-tests
  fi
  if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi finds none)" >&2
    exit 1
  fi
  mkdir -p "$out"
  : > "$out/status.txt"
  export LD_LIBRARY_PATH="$PWD/$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export TJ_CACHE_DIR=
  nvidia-smi > "$out/smi.txt" 2>&1
  step tests_cuda 150 "$tests" "[cuda]" -d yes
  step blas 60 "$tests" "[blas]"
  step bench 150 "$bin/tj-bench" --device cuda --json "$out/bench.json" --csv "$out/bench.csv" \
    --chart "$out/bench.svg"
  if python3 -c "import torch" 2> /dev/null && [[ -s $out/bench.json ]]; then
    step side_by_side 120 python3 scripts/gpu_torch.py "$out/bench.json"
  else
    echo "side_by_side: skipped (no PyTorch, or no bench.json)" | tee -a "$out/status.txt"
  fi
  echo "== results in $out"
  cat "$out/status.txt"
  ! grep -q -v "exit 0\|skipped" "$out/status.txt"
}

case $mode in
  build) build_it "${1:-build-gpu}" ;;
  run)
    out=${2:-${OUT:-gpu-check}}
    run_it "${1:-build-gpu-pack}"
    ;;
  all)
    out=${2:-${OUT:-gpu-check}}
    build_it "${1:-build-gpu}" && run_it "${1:-build-gpu}-pack"
    ;;
esac

#!/usr/bin/env bash
# Installs the Debian packages tensorjit builds against. Idempotent: packages
# already present are not fetched again, and apt's lists are refreshed only
# when something is missing.
set -euo pipefail

packages=(cmake ninja-build g++ llvm-19-dev libfmt-dev catch2
          zlib1g-dev libzstd-dev libedit-dev libxml2-dev
          libopenblas-dev liblapacke-dev pkg-config
          libeigen3-dev) # Eigen: only tj-bench-eigen, a benchmark peer, includes it
# Extra packages a caller needs (scripts/fuzz.sh: clang and libFuzzer).
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

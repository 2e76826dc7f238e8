#!/usr/bin/env bash
# Sets up the machine, builds tensorjit and runs the walk through the first seed tutorial.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2 --target seed000_demo
./build/seed000_demo

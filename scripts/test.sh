#!/usr/bin/env bash
# Sets up the machine, builds everything, runs the test suite, then installs
# the library and builds and runs an application against the installed package.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 --timeout 600

rm -rf build/install build/consumer
cmake --install build --prefix build/install > /dev/null
cmake -S examples/consumer -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/install"
cmake --build build/consumer -j2
LD_LIBRARY_PATH="$PWD/build/install/lib" ./build/consumer/consumer

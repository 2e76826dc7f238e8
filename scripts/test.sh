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
# The installed tools start from the prefix by their own run path, without LD_LIBRARY_PATH.
env -u LD_LIBRARY_PATH build/install/bin/tjc --help > /dev/null
env -u LD_LIBRARY_PATH build/install/bin/tjc --version
env -u LD_LIBRARY_PATH build/install/bin/tj-bench --help > /dev/null
# pkg-config finds the package, and the paths it gives hold the header and the library.
pc_flags=$(PKG_CONFIG_PATH="$PWD/build/install/lib/pkgconfig" pkg-config --cflags --libs tensorjit)
echo "pkg-config: $pc_flags"
for flag in $pc_flags; do
  case $flag in
    -I*) [[ -f ${flag#-I}/tensorjit/tensorjit.h ]] || { echo "pkg-config: no header in $flag"; exit 1; } ;;
    -L*) [[ -e ${flag#-L}/libtensorjit.so ]] || { echo "pkg-config: no library in $flag"; exit 1; } ;;
  esac
done
cmake -S examples/consumer -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$PWD/build/install"
cmake --build build/consumer -j2
# CMake gives the consumer a run path to the imported library's folder.
env -u LD_LIBRARY_PATH ./build/consumer/consumer

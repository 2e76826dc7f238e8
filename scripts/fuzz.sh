#!/usr/bin/env bash
# Fuzzes the .tjir parser for a bounded time (default 60 s) under ASan+UBSan
# with libFuzzer, starting from the committed corpus in test/fuzz/corpus.
# New inputs it finds go to build-fuzz/corpus, crashes to build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
# clang 19: the public headers need std::source_location (clang 15 or later).
bash scripts/setup.sh clang-19 libclang-rt-19-dev
# A build directory made by another compiler is started afresh.
grep -qs "CMAKE_CXX_COMPILER:FILEPATH=.*clang++-19" build-fuzz/CMakeCache.txt || rm -rf build-fuzz
CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DTJ_SANITIZE=ON -DTJ_FUZZ=ON -DTJ_BUILD_TESTS=OFF -DTJ_BUILD_TOOLS=OFF -DTJ_CUDA=OFF > /dev/null
cmake --build build-fuzz -j2 --target tj-fuzz-tjir
mkdir -p build-fuzz/corpus
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ./build-fuzz/tj-fuzz-tjir -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=build-fuzz/ build-fuzz/corpus test/fuzz/corpus

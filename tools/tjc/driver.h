// tjc, the compiler driver, as a function: main() calls it, and tests run it in-process.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace tj::tjc {

// Runs tjc with `args` (without the program name), printing results to `out`
// and diagnostics to `err`. Returns the exit code: 0 success, 1 a user error
// (a bad file, expression or input), 2 a usage error.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace tj::tjc

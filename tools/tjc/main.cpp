// tjc: reads, prints, differentiates and runs tensor graphs (tjc --help).
#include <exception>
#include <iostream>

#include "tools/tjc/driver.h"

int main(int argc, char** argv) {
  // The driver reports the errors of the input itself; anything else that escapes it (a failed
  // allocation, say) is one line and status 1 as well, not an abort.
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    return tj::tjc::run(args, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "tjc: " << e.what() << "\n";
  } catch (...) {
    std::cout.flush();
    std::cerr << "tjc: unknown error\n";
  }
  return 1;
}

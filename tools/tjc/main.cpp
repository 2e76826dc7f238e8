// tjc: reads, prints, differentiates and runs tensor graphs (tjc --help).
#include <iostream>

#include "driver.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return tj::tjc::run(args, std::cout, std::cerr);
}

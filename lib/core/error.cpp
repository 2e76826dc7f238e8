// Messages of errors located in source text (.tjir files, tjc expressions).
#include "tensorjit/error.h"

#include <fmt/format.h>

namespace tj {

std::string located_message(std::string_view file, std::string_view text, int line, int col,
                            std::string_view message) {
  // The line's text, found by counting newlines; a position past the end
  // (an unexpected end of input) points just after the last character.
  size_t begin = 0;
  for (int l = 1; l < line && begin < text.size(); ++l) {
    size_t nl = text.find('\n', begin);
    if (nl == std::string_view::npos) {
      begin = text.size();
      break;
    }
    begin = nl + 1;
  }
  size_t end = text.find('\n', begin);
  std::string_view row =
      text.substr(begin, end == std::string_view::npos ? text.npos : end - begin);
  // Tabs stay tabs under the caret so that it lines up in a terminal.
  std::string pad;
  for (int c = 1; c < col && static_cast<size_t>(c - 1) < row.size(); ++c)
    pad += row[static_cast<size_t>(c - 1)] == '\t' ? '\t' : ' ';
  for (size_t c = row.size() + 1; c < static_cast<size_t>(std::max(col, 1)); ++c)
    pad += ' ';
  return fmt::format("{}:{}:{}: error: {}\n  {}\n  {}^", file, line, col, message, row, pad);
}

} // namespace tj

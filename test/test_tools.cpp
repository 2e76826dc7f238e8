// The built tools as a user runs them: exit codes, one-line errors, --version, and tj-bench's
// chart, CSV and JSON files from a small run.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <tensorjit/tensorjit.h>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "test/support/temp_dir.h"
#include "tools/tjc/driver.h"

extern char** environ;

namespace {

struct Process {
  bool exited = false; // false: killed by a signal (an abort)
  int code = -1;
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `path` with `args`, stdout and stderr captured in files (no shell: paths stay as given).
Process run_process(const std::string& path, const std::vector<std::string>& args) {
  tj::test::TempDir dir("tj-tools");
  const std::string out = dir.file("stdout"), err = dir.file("stderr");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> owned{path};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  Process p;
  p.exited = WIFEXITED(status);
  p.code = p.exited ? WEXITSTATUS(status) : -1;
  p.out = read_file(out);
  p.err = read_file(err);
  return p;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// A tool's failure: it exits (no abort) with `code` and says one line on stderr, "TOOL: ...".
void check_one_line_error(const Process& p, int code, const std::string& tool) {
  INFO("stderr: " << p.err);
  CHECK(p.exited);
  CHECK(p.code == code);
  CHECK(lines(p.err).size() == 1);
  CHECK(p.err.rfind(tool + ": ", 0) == 0);
  CHECK(p.err.find("terminate called") == std::string::npos);
}

// A strict reader of the XML that tj-bench writes: elements, attributes, text, character and
// entity references, comments and the declaration. Throws on anything not well-formed.
struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Element> children;
};

class XmlReader {
public:
  explicit XmlReader(const std::string& text) : s_(text) {}

  Element document() {
    if (s_.compare(0, 5, "<?xml") == 0) skip_past("?>");
    misc();
    Element root = element();
    misc();
    if (i_ != s_.size()) fail("content after the root element");
    return root;
  }

private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("XML: " + what + " at offset " + std::to_string(i_));
  }
  void skip_past(const std::string& end) {
    size_t p = s_.find(end, i_);
    if (p == std::string::npos) fail("no " + end);
    i_ = p + end.size();
  }
  void spaces() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
      ++i_;
  }
  // Whitespace and comments between top-level parts.
  void misc() {
    for (;;) {
      spaces();
      if (s_.compare(i_, 4, "<!--") != 0) return;
      skip_past("-->");
    }
  }
  std::string name() {
    size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) ||
                              std::string_view("_-.:").find(s_[i_]) != std::string_view::npos))
      ++i_;
    if (i_ == b) fail("a name was expected");
    return s_.substr(b, i_ - b);
  }
  // Character data up to `stop`, with references checked and expanded.
  std::string chars(char stop) {
    std::string out;
    while (i_ < s_.size() && s_[i_] != stop && s_[i_] != '<') {
      if (s_[i_] != '&') {
        out += s_[i_++];
        continue;
      }
      size_t semi = s_.find(';', i_);
      if (semi == std::string::npos) fail("an unterminated reference");
      std::string ref = s_.substr(i_ + 1, semi - i_ - 1);
      static const std::map<std::string, std::string> entities{
          {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
      if (entities.count(ref))
        out += entities.at(ref);
      else if (ref.size() > 1 && ref[0] == '#' &&
               ref.find_first_not_of(ref[1] == 'x' ? "0123456789abcdefABCDEF" : "0123456789",
                                     ref[1] == 'x' ? 2 : 1) == std::string::npos)
        out += '?';
      else
        fail("an unknown reference &" + ref + ";");
      i_ = semi + 1;
    }
    return out;
  }
  Element element() {
    if (i_ >= s_.size() || s_[i_] != '<') fail("'<' was expected");
    ++i_;
    Element e;
    e.name = name();
    for (;;) {
      const size_t before = i_;
      spaces();
      if (s_.compare(i_, 2, "/>") == 0) {
        i_ += 2;
        return e;
      }
      if (i_ < s_.size() && s_[i_] == '>') {
        ++i_;
        break;
      }
      if (i_ == before) fail("a space before an attribute was expected");
      std::string key = name();
      spaces();
      if (i_ >= s_.size() || s_[i_] != '=') fail("'=' was expected");
      ++i_;
      spaces();
      if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("a quote was expected");
      const char q = s_[i_++];
      std::string value = chars(q);
      if (i_ >= s_.size() || s_[i_] != q) fail("'<' in an attribute value");
      ++i_;
      if (!e.attrs.emplace(key, value).second) fail("attribute " + key + " is repeated");
    }
    for (;;) {
      chars('<');
      if (i_ >= s_.size()) fail("<" + e.name + "> is not closed");
      if (s_.compare(i_, 4, "<!--") == 0) {
        skip_past("-->");
      } else if (s_.compare(i_, 2, "</") == 0) {
        i_ += 2;
        if (name() != e.name) fail("the end tag does not match <" + e.name + ">");
        spaces();
        if (i_ >= s_.size() || s_[i_] != '>') fail("'>' was expected");
        ++i_;
        return e;
      } else {
        e.children.push_back(element());
      }
    }
  }

  const std::string& s_;
  size_t i_ = 0;
};

// The chart's groups of bars: (section, workload, bars) in document order.
struct Group {
  std::string section, workload;
  int bars = 0;
};
void collect_groups(const Element& e, std::vector<Group>& out) {
  auto cls = e.attrs.find("class");
  if (e.name == "g" && cls != e.attrs.end() && cls->second == "row") {
    Group g{e.attrs.at("data-section"), e.attrs.at("data-workload"), 0};
    for (const auto& c : e.children)
      if (c.name == "rect" && c.attrs.count("class") && c.attrs.at("class").rfind("bar ", 0) == 0)
        ++g.bars;
    out.push_back(g);
    return;
  }
  for (const auto& c : e.children)
    collect_groups(c, out);
}

} // namespace

TEST_CASE("tools: tj::version, tjc --version and --help", "[tools][tjc]") {
  CHECK(std::string(tj::version()) == TJ_PROJECT_VERSION);
  const std::string expected = std::string("tjc (tensorjit) ") + tj::version() + "\n";
  std::ostringstream out, err;
  CHECK(tj::tjc::run({"--version"}, out, err) == 0);
  CHECK(out.str() == expected);
  Process v = run_process(TJ_TJC_PATH, {"--version"});
  CHECK(v.code == 0);
  CHECK(v.out == expected);
  Process help = run_process(TJ_TJC_PATH, {"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("--version") != std::string::npos);
}

TEST_CASE("tools: tjc's usage errors are one line and exit 2", "[tools][tjc]") {
  check_one_line_error(run_process(TJ_TJC_PATH, {"x.tjir", "--frobnicate"}), 2, "tjc");
  Process missing = run_process(TJ_TJC_PATH, {"x.tjir", "--emit"});
  check_one_line_error(missing, 2, "tjc");
  CHECK(missing.err.find("--emit needs a value") != std::string::npos);
  check_one_line_error(run_process(TJ_TJC_PATH, {"--version=2"}), 2, "tjc");
}

#ifdef TJ_BENCH_PATH
TEST_CASE("tools: tj-bench's usage errors exit 2 and name the argument", "[tools][tj-bench]") {
  Process unknown = run_process(TJ_BENCH_PATH, {"--frobnicate"});
  check_one_line_error(unknown, 2, "tj-bench");
  CHECK(unknown.err.find("'--frobnicate'") != std::string::npos);
  Process no_value = run_process(TJ_BENCH_PATH, {"--reps", "3", "--size"});
  check_one_line_error(no_value, 2, "tj-bench");
  CHECK(no_value.err.find("--size needs a value") != std::string::npos);
  Process bad_size = run_process(TJ_BENCH_PATH, {"--size", "12x"});
  check_one_line_error(bad_size, 2, "tj-bench");
  CHECK(bad_size.err.find("'12x'") != std::string::npos);
  Process bad_device = run_process(TJ_BENCH_PATH, {"--device", "tpu"});
  check_one_line_error(bad_device, 2, "tj-bench");
  CHECK(bad_device.err.find("'tpu'") != std::string::npos);
  Process bad_only = run_process(TJ_BENCH_PATH, {"--only", "softmax,nope"});
  check_one_line_error(bad_only, 2, "tj-bench");
  CHECK(bad_only.err.find("'nope'") != std::string::npos);
  Process help = run_process(TJ_BENCH_PATH, {"--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("--chart FILE.svg") != std::string::npos);
  // An output file that cannot be written fails before the run: an error, exit 1.
  tj::test::TempDir dir("tj-bench");
  Process unwritable = run_process(TJ_BENCH_PATH, {"--chart", dir.file("no/such/dir/x.svg")});
  check_one_line_error(unwritable, 1, "tj-bench");
  CHECK(unwritable.out.empty());
}

TEST_CASE("tools: tj-bench --device cuda without a GPU fails in one line", "[tools][tj-bench]") {
  if (tj::cuda::is_available()) {
    WARN("a GPU is present: nothing to check");
    return;
  }
  Process p = run_process(TJ_BENCH_PATH, {"--device", "cuda"});
  check_one_line_error(p, 1, "tj-bench");
  CHECK(p.out.empty());
}

TEST_CASE("tools: tj-bench --chart draws a group of bars per workload of the table",
          "[tools][tj-bench]") {
  tj::test::TempDir dir("tj-bench");
  const std::string svg = dir.file("bench.svg"), csv = dir.file("bench.csv"),
                    json = dir.file("bench.json");
  // Small and few workloads: a few seconds. Names with a space may be spelt with '_'.
  Process p =
      run_process(TJ_BENCH_PATH, {"--size", "65536", "--reps", "3", "--only",
                                  "copy,gelu_tanh,softmax,slice add_,matmul,compile,cache_hit",
                                  "--chart", svg, "--csv", csv, "--json", json});
  INFO("stdout:\n" << p.out << "stderr:\n" << p.err);
  REQUIRE(p.code == 0);
  CHECK(p.err.rfind("[1/7] copy 64K ...\n", 0) == 0);

  // The table: workloads in order, with their lines (one per variant).
  std::vector<std::pair<std::string, int>> table;
  bool in_table = false;
  for (const auto& line : lines(p.out)) {
    if (line.rfind("workload ", 0) == 0) {
      in_table = true;
    } else if (in_table && line.empty()) {
      break;
    } else if (in_table) {
      std::string w = line.substr(0, 12);
      w.erase(w.find_last_not_of(' ') + 1);
      if (table.empty() || table.back().first != w) table.push_back({w, 0});
      ++table.back().second;
    }
  }
  REQUIRE(table.size() == 4);
  CHECK(table[1] == std::pair<std::string, int>{"gelu_tanh", 3}); // fused, unfused, c++ loop
  CHECK(table[3] == std::pair<std::string, int>{"slice add_", 1});

  const std::string text = read_file(svg);
  Element root;
  REQUIRE_NOTHROW(root = XmlReader(text).document());
  CHECK(root.name == "svg");
  std::vector<Group> groups;
  collect_groups(root, groups);
  std::vector<std::pair<std::string, int>> memory;
  for (const auto& g : groups)
    if (g.section == "memory") memory.push_back({g.workload, g.bars});
  CHECK(memory == table);
  // Then one group per product (shapes, dtypes, the fused linear layer).
  REQUIRE(groups.size() > table.size() + 1);
  for (size_t i = table.size(); i < groups.size(); ++i) {
    CHECK(groups[i].section == "compute");
    CHECK(groups[i].workload == "matmul");
  }
  CHECK(text.find("tensorjit tj-bench on ") != std::string::npos);
  CHECK(text.find(">100%</text>") != std::string::npos);
#ifdef TJ_PYTHON3
  // A second opinion from a full XML parser, and the JSON parsed as well.
  CHECK(run_process(TJ_PYTHON3,
                    {"-c", "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])", svg})
            .code == 0);
  CHECK(run_process(TJ_PYTHON3, {"-c", "import sys, json; json.load(open(sys.argv[1]))", json})
            .code == 0);
#endif

  // CSV: a header, then one line per workload run (the two latencies included) and per product
  // (eleven of them; their dims scale with --size, here 1/16).
  std::vector<std::string> rows = lines(read_file(csv));
  REQUIRE(rows.size() == 1 + 6 + 11);
  CHECK(rows[0].rfind("workload,shape,unit,fused_ms,", 0) == 0);
  CHECK(rows[4].rfind("slice add_,\"512x256[:, :128]\",GB/s,", 0) == 0);
  CHECK(rows[5].rfind("matmul,64x64x64 float32,GFLOP/s,", 0) == 0);
  CHECK(rows[14].rfind("matmul,256x64x64 float32 relu(x @ w.t() + b),GFLOP/s,", 0) == 0);
  CHECK(rows[15].rfind("matmul,512x16x64 float32 gelu(x @ w.t() + b) + r,GFLOP/s,", 0) == 0);
}
#endif

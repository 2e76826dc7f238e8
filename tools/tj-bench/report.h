// The results of a tj-bench run, and the writers that present them: the table on stdout, JSON,
// CSV and an SVG chart all read the one list of rows.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace tj::bench {

// What a timing is of: a tensorjit kernel (fused, or the only way it runs: a clone, an in-place
// update, a product), the same graph run with TJ_FUSION=0, or code outside tensorjit.
enum class Role { Fused, Unfused, Baseline };

struct Variant {
  std::string name; // as the table prints it: "fused", "c++ loop (1 thread)", ...
  Role role;
  double ms;   // median wall time of one run
  int samples; // runs the median is of
};

// Memory: bound by bandwidth, `work` is bytes read and written. Compute: a product, `work` is
// floating-point operations. Latency: only the time counts (`work` is 0).
enum class Kind { Memory, Compute, Latency };

struct Row {
  std::string workload; // the name --only selects
  std::string shape;    // "4096x2048"
  Kind kind;
  double work;
  std::vector<Variant> variants;
  // Products on the CPU: the FMA peak (GFLOP/s) of their dtype measured in the same run.
  double peak = 0;

  // GB/s for memory rows, GFLOP/s for products.
  double rate(const Variant& v) const { return work / (v.ms * 1e-3) / 1e9; }
  const Variant* find(Role role) const;
};

struct Report {
  std::string device;  // "cpu", "cuda:0"
  std::string machine; // the CPU's model and cores, or the GPU's name
  std::string date;    // YYYY-MM-DD
  int threads = 0;     // CPU threads tensorjit runs on
  int reps = 0;
  int64_t size = 0; // elements of the 1-D workloads
  // The copy bandwidth, the roofline of memory rows (bytes read + written per second). On the
  // CPU it is measured before and after the workloads, and the faster counts.
  double copy_gbps = 0;
  double copy_gbps_before = 0, copy_gbps_after = 0;
  // The CPU's FMA peak (fma_peak_gflops in peers.h) in float32 and float64, and its vectors.
  double fma_peak_f32 = 0, fma_peak_f64 = 0;
  double dot_peak_bf16 = 0; // bfloat16 dot products (bf16_dot_peak_gflops), 0 without them
  std::string fma_isa;
  std::vector<Row> rows;

  bool gpu() const { return device != "cpu"; }
  // The fraction of the copy bandwidth a memory row's variant reaches.
  double of_copy(const Row& r, const Variant& v) const { return r.rate(v) / copy_gbps; }
  const Row* find(const std::string& workload) const;
};

// The text tj-bench prints on stdout.
void print_table(const Report& r, std::ostream& out);
void write_json(const Report& r, std::ostream& out);
// One line per workload after a header; memory rows carry fractions of the copy.
void write_csv(const Report& r, std::ostream& out);
// A self-contained SVG: bars per workload as fractions of the copy, products in GFLOP/s.
void write_svg(const Report& r, std::ostream& out);

// Text escaped for XML content and attribute values.
std::string xml_escape(const std::string& s);
// 16777216 -> "16M", 65536 -> "64K": element counts as the README writes them.
std::string count_text(int64_t n);

} // namespace tj::bench

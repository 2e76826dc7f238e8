// The text writers of a tj-bench report: the table on stdout, JSON and CSV.
#include "tools/tj-bench/report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>

namespace tj::bench {

const Variant* Row::find(Role role) const {
  for (const auto& v : variants)
    if (v.role == role) return &v;
  return nullptr;
}

const Row* Report::find(const std::string& workload) const {
  for (const auto& r : rows)
    if (r.workload == workload) return &r;
  return nullptr;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      // Control characters other than tab and newline are not allowed in XML 1.0 at all.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
        out += ' ';
      else
        out += c;
    }
  }
  return out;
}

std::string count_text(int64_t n) {
  if (n % (1 << 20) == 0) return fmt::format("{}M", n >> 20);
  if (n % (1 << 10) == 0) return fmt::format("{}K", n >> 10);
  return std::to_string(n);
}

namespace {

// "c++ loop (1 thread)" is "the c++ loop" in a sentence, "OpenBLAS (Zen), then bias and relu"
// "the OpenBLAS".
std::string short_name(const std::string& variant) {
  return variant.substr(0, std::min(variant.find(" ("), variant.find(", ")));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += fmt::format("\\{}", c);
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else
      out += c;
  }
  return out + "\"";
}

// A finite number for JSON and CSV, which have no spelling for infinity or NaN.
double finite(double x) { return std::isfinite(x) ? x : 0.0; }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string flops_text(double gflops) {
  return gflops >= 1000 ? fmt::format("{:.1f} TFLOP/s", gflops / 1000)
                        : fmt::format("{:.1f} GFLOP/s", gflops);
}

} // namespace

void print_table(const Report& r, std::ostream& out) {
  if (r.gpu()) {
    fmt::print(out, "device: {}, device-to-device copy {:.1f} GB/s (median of {})\n", r.machine,
               r.copy_gbps, r.reps);
    fmt::print(out, "times are end to end: graph, schedule, launch and a synchronize\n\n");
  }
  // Products first, then the memory-bound table that their GB/s figures share.
  const Row* matmul = r.find("matmul");
  for (const auto& row : r.rows) {
    if (row.workload == "matmul" || row.workload == "linalg") {
      std::string line = fmt::format("{} {}:", row.workload, row.shape);
      for (const Variant& v : row.variants) {
        line += fmt::format(" {} {:.3f} ms, {}", v.name, v.ms, flops_text(row.rate(v)));
        if (row.peak > 0) line += fmt::format(" ({:.0f}% of peak)", 100 * row.rate(v) / row.peak);
        line += ";";
      }
      line.pop_back();
      // Each peer's time over tensorjit's: above 1, tensorjit is faster.
      const Variant* f = row.find(Role::Fused);
      std::string ratios;
      for (const Variant& v : row.variants)
        if (f && v.role == Role::Baseline)
          ratios += fmt::format("{}{:.2f}x the {}", ratios.empty() ? " -> " : ", ", v.ms / f->ms,
                                short_name(v.name));
      fmt::print(out, "{}{}\n", line, ratios);
    } else if (row.kind == Kind::Compute) {
      const Variant* f = row.find(Role::Fused);
      const Variant* u = row.find(Role::Unfused);
      if (!f || !u) continue;
      std::string of_matmul =
          matmul ? fmt::format(", {:.0f}% of the matmul's",
                               100 * row.rate(*f) / matmul->rate(matmul->variants.front()))
                 : "";
      fmt::print(out, "{} {}: fused {:.2f} ms ({}{}), unfused {:.2f} ms: fused is {:.2f}x faster\n",
                 row.workload, row.shape, f->ms, flops_text(row.rate(*f)), of_matmul, u->ms,
                 u->ms / f->ms);
    }
  }
  if (r.fma_peak_f32 > 0)
    fmt::print(out, "FMA peak ({}, {} threads): {:.1f} GFLOP/s float32, {:.1f} float64{}\n",
               r.fma_isa, r.threads, r.fma_peak_f32, r.fma_peak_f64,
               r.dot_peak_bf16 > 0 ? fmt::format(", {:.1f} bfloat16 dot products", r.dot_peak_bf16)
                                   : "");
  if (!r.gpu())
    fmt::print(out,
               "machine: {} threads, copy bandwidth {:.1f} GB/s (the faster of {:.1f} before and "
               "{:.1f} after the workloads, medians of {})\n\n",
               r.threads, r.copy_gbps, r.copy_gbps_before, r.copy_gbps_after, r.reps);

  bool any_memory = false;
  for (const auto& row : r.rows)
    any_memory |= row.kind == Kind::Memory;
  if (any_memory) {
    fmt::print(out, "{:<12} {:<22} {:>10} {:>10} {:>12}\n", "workload", "variant", "ms", "GB/s",
               "% of copy");
    for (const auto& row : r.rows)
      if (row.kind == Kind::Memory)
        for (const auto& v : row.variants)
          fmt::print(out, "{:<12} {:<22} {:>10.2f} {:>10.1f} {:>11.1f}%\n", row.workload, v.name,
                     v.ms, row.rate(v), 100 * r.of_copy(row, v));
    fmt::print(out, "\n");
  }
  for (const auto& row : r.rows) {
    const Variant* f = row.find(Role::Fused);
    const Variant* u = row.find(Role::Unfused);
    if (row.kind == Kind::Memory && f && u)
      fmt::print(out, "{}: fused is {:.2f}x faster than unfused\n", row.workload, u->ms / f->ms);
  }
  for (const auto& row : r.rows) {
    const Variant* f = row.find(Role::Fused);
    const Variant* b = row.find(Role::Baseline);
    if (f && b && row.kind != Kind::Compute) // products say so on their own line
      fmt::print(out, "{}: fused is {:.2f}x faster than the {}\n", row.workload, b->ms / f->ms,
                 short_name(b->name));
  }
  if (r.find("sum"))
    fmt::print(out, "(sum reads only: its GB/s can exceed the copy's read+write rate)\n");
  if (const Row* c = r.find("compile"))
    fmt::print(out, "compile latency of one fused elementwise kernel: median {:.2f} ms over {}\n",
               c->variants.front().ms, c->variants.front().samples);
  if (const Row* h = r.find("cache hit"))
    fmt::print(out, "cache hit, end to end ({}): median {:.1f} us\n", h->shape,
               h->variants.front().ms * 1e3);
  if (const Row* c = r.find("op chain"))
    fmt::print(out,
               "a chain of 200 elementwise ops on 16 elements, then sum().item(): median {:.1f} "
               "us ({:.2f} us per op)\n",
               c->variants.front().ms * 1e3, c->variants.front().ms * 1e3 / 200);
  if (const Row* m = r.find("materialized op"))
    fmt::print(out, "the same chain with every op materialized: median {:.2f} us per op\n",
               m->variants.front().ms * 1e3);
}

void write_json(const Report& r, std::ostream& out) {
  fmt::print(out,
             "{{\n  \"device\": {},\n  \"machine\": {},\n  \"date\": {},\n  \"threads\": {},\n"
             "  \"size\": {},\n  \"reps\": {},\n  \"copy_gbps\": {:.3f},\n",
             json_string(r.device), json_string(r.machine), json_string(r.date), r.threads, r.size,
             r.reps, r.copy_gbps);
  if (r.fma_peak_f32 > 0)
    fmt::print(out, "  \"fma_peak_gflops\": {{\"float32\": {:.3f}, \"float64\": {:.3f}{}}},\n",
               r.fma_peak_f32, r.fma_peak_f64,
               r.dot_peak_bf16 > 0 ? fmt::format(", \"bfloat16_dot\": {:.3f}", r.dot_peak_bf16)
                                   : "");
  // One entry per timing: memory rows in "rows" (as the table), products in "products".
  auto entries = [&](Kind kind, auto&& print) {
    bool first = true;
    for (const auto& row : r.rows)
      if (row.kind == kind)
        for (const auto& v : row.variants) {
          fmt::print(out, "{}    {{\"workload\": {}, \"shape\": {}, \"variant\": {}, ",
                     first ? "" : ",\n", json_string(row.workload), json_string(row.shape),
                     json_string(v.name));
          print(row, v);
          fmt::print(out, "}}");
          first = false;
        }
    fmt::print(out, "\n  ]");
  };
  fmt::print(out, "  \"rows\": [\n");
  entries(Kind::Memory, [&](const Row& row, const Variant& v) {
    fmt::print(out, "\"ms\": {:.4f}, \"gbps\": {:.3f}, \"fraction_of_copy\": {:.4f}", v.ms,
               finite(row.rate(v)), finite(r.of_copy(row, v)));
  });
  fmt::print(out, ",\n  \"products\": [\n");
  entries(Kind::Compute, [&](const Row& row, const Variant& v) {
    fmt::print(out, "\"ms\": {:.4f}, \"gflops\": {:.3f}", v.ms, finite(row.rate(v)));
    if (row.peak > 0)
      fmt::print(out, ", \"fraction_of_peak\": {:.4f}", finite(row.rate(v) / row.peak));
  });
  if (const Row* c = r.find("compile"))
    fmt::print(out, ",\n  \"compile_ms_median\": {:.4f},\n  \"compile_samples\": {}",
               c->variants.front().ms, c->variants.front().samples);
  if (const Row* h = r.find("cache hit"))
    fmt::print(out, ",\n  \"cache_hit_us_median\": {:.3f}", h->variants.front().ms * 1e3);
  if (const Row* c = r.find("op chain"))
    fmt::print(out, ",\n  \"op_chain_us_median\": {:.3f}", c->variants.front().ms * 1e3);
  if (const Row* m = r.find("materialized op"))
    fmt::print(out, ",\n  \"materialized_op_us_median\": {:.3f}", m->variants.front().ms * 1e3);
  fmt::print(out, "\n}}\n");
}

void write_csv(const Report& r, std::ostream& out) {
  // Rates are GB/s for memory rows and GFLOP/s for products; latency rows have times only.
  fmt::print(out, "workload,shape,unit,fused_ms,fused_rate,fused_of_copy,unfused_ms,unfused_rate,"
                  "unfused_of_copy,baseline,baseline_ms,baseline_rate,baseline_of_copy\n");
  for (const auto& row : r.rows) {
    const char* unit = row.kind == Kind::Memory    ? "GB/s"
                       : row.kind == Kind::Compute ? "GFLOP/s"
                                                   : "";
    fmt::print(out, "{},{},{}", csv_field(row.workload), csv_field(row.shape), unit);
    for (Role role : {Role::Fused, Role::Unfused, Role::Baseline}) {
      const Variant* v = row.find(role);
      if (role == Role::Baseline) fmt::print(out, ",{}", v ? csv_field(v->name) : "");
      if (!v) {
        fmt::print(out, ",,,");
        continue;
      }
      fmt::print(out, ",{:.4f}", v->ms);
      fmt::print(out, ",{}",
                 row.kind == Kind::Latency ? "" : fmt::format("{:.3f}", finite(row.rate(*v))));
      fmt::print(out, ",{}",
                 row.kind == Kind::Memory ? fmt::format("{:.4f}", finite(r.of_copy(row, *v))) : "");
    }
    fmt::print(out, "\n");
  }
}

} // namespace tj::bench

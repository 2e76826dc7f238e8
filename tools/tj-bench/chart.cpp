// The SVG chart of a tj-bench report: one group of horizontal bars per workload, memory-bound
// workloads as a share of the copy bandwidth, products in FLOP/s on their own axis.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "tools/tj-bench/report.h"

namespace tj::bench {
namespace {

// Geometry, in pixels.
constexpr double kWidth = 1000;
constexpr double kMargin = 24;
constexpr double kVariantRight = 372; // variant labels end here
constexpr double kBarLeft = 380;
constexpr double kBarWidth = 440; // the axis's maximum
constexpr double kBarHeight = 16;
constexpr double kBarStep = 21; // bar height and the gap below it
constexpr double kGroupPad = 8; // above and below the bars of a workload

const char* color(Role role) {
  switch (role) {
  case Role::Fused:
    return "#3b6fb6";
  case Role::Unfused:
    return "#f28e2b";
  case Role::Baseline:
    return "#9a9a9a";
  }
  return "#000";
}

const char* role_class(Role role) {
  switch (role) {
  case Role::Fused:
    return "fused";
  case Role::Unfused:
    return "unfused";
  case Role::Baseline:
    return "baseline";
  }
  return "";
}

// A step of 1, 2, 2.5 or 5 times a power of ten that divides [0, max] into about `ticks`.
double nice_step(double max, int ticks) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double raw = max / ticks;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string number(double v) {
  if (v == std::floor(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:g}", v);
}

// An axis from 0 to `max` in steps of `step`: tick labels above and below the bars, grid lines
// between. `unit` follows each label; `mark`, when positive, is drawn as the reference line.
// Products' GFLOP/s are divided by `scale` and named `rate_unit` (TFLOP/s on a GPU).
struct Axis {
  double max = 100, step = 25;
  std::string unit;
  double mark = -1;
  std::string mark_label;
  double scale = 1;
  std::string rate_unit;

  double x(double v) const { return kBarLeft + kBarWidth * std::clamp(v / max, 0.0, 1.0); }
};

void grid(std::ostream& out, const Axis& a, double top, double bottom) {
  const int n = static_cast<int>(std::round(a.max / a.step));
  // The ticks, and the reference line among them even where the steps pass it (a copy timed
  // slow puts bars at 900% of it, and the axis in steps of 200).
  std::vector<double> ticks;
  for (int i = 0; i <= n; ++i)
    ticks.push_back(i * a.step);
  if (a.mark > 0 && std::none_of(ticks.begin(), ticks.end(),
                                 [&](double v) { return std::abs(v - a.mark) < 1e-9; }))
    ticks.insert(std::upper_bound(ticks.begin(), ticks.end(), a.mark), a.mark);
  for (size_t i = 0; i < ticks.size(); ++i) {
    const double v = ticks[i], x = a.x(v);
    const bool ref = std::abs(v - a.mark) < 1e-9;
    fmt::print(
        out, "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" class=\"{3}\"/>\n",
        x, top, bottom,
        ref      ? "ref"
        : i == 0 ? "base"
                 : "grid");
    for (double y : {top - 6, bottom + 15})
      fmt::print(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}{}</text>\n", x, y,
                 number(v), xml_escape(a.unit));
  }
  // Under the bottom tick of the reference line, clear of the bars.
  if (a.mark > 0)
    fmt::print(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"reflabel\">{}</text>\n", a.x(a.mark),
               bottom + 29, xml_escape(a.mark_label));
}

// The rows of one section, each a group of bars; returns the y below the last.
double section(std::ostream& out, const Report& r, Kind kind, const Axis& axis, double y,
               const std::string& name) {
  const double top = y;
  int k = 0;
  std::string bands, bars;
  for (const auto& row : r.rows) {
    if (row.kind != kind) continue;
    const double bars_h =
        kBarStep * static_cast<double>(row.variants.size()) - (kBarStep - kBarHeight);
    const double h = std::max(bars_h, 34.0) + 2 * kGroupPad;
    fmt::format_to(std::back_inserter(bars),
                   "<g class=\"row\" data-section=\"{}\" data-workload=\"{}\">\n", name,
                   xml_escape(row.workload));
    if (k++ % 2 == 0)
      fmt::format_to(std::back_inserter(bands),
                     "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                     "class=\"band\"/>\n",
                     kMargin - 8, y, kWidth - 2 * kMargin + 16, h);
    fmt::format_to(std::back_inserter(bars),
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"workload\">{}</text>\n"
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"shape\">{}</text>\n",
                   kMargin, y + kGroupPad + 13, xml_escape(row.workload), kMargin,
                   y + kGroupPad + 30, xml_escape(row.shape));
    double by = y + kGroupPad;
    for (const auto& v : row.variants) {
      const double rate = row.rate(v);
      const double value = kind == Kind::Memory ? 100 * r.of_copy(row, v) : rate / axis.scale;
      const bool ok = std::isfinite(value) && value >= 0;
      const double x1 = ok ? axis.x(value) : kBarLeft;
      std::string label = !ok                    ? "n/a"
                          : kind == Kind::Memory ? fmt::format("{:.0f}%", value)
                                                 : fmt::format("{:.1f} {}", value, axis.rate_unit);
      std::string detail = kind == Kind::Memory && ok
                               ? fmt::format("{:.1f} GB/s, {:.2f} ms", rate, v.ms)
                               : fmt::format("{:.2f} ms", v.ms);
      fmt::format_to(
          std::back_inserter(bars),
          "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"variant\">{}</text>\n"
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"2\" "
          "class=\"bar {}\"><title>{} {}, {}: {}, {}</title></rect>\n"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"value\">{} <tspan class=\"detail\">{}</tspan>"
          "</text>\n",
          kVariantRight, by + 12.5, xml_escape(v.name), kBarLeft, by, std::max(x1 - kBarLeft, 1.0),
          kBarHeight, role_class(v.role), xml_escape(row.workload), xml_escape(row.shape),
          xml_escape(v.name), label, detail, x1 + 6, by + 12.5, label, detail);
      by += kBarStep;
    }
    fmt::format_to(std::back_inserter(bars), "</g>\n");
    y += h;
  }
  // Alternate rows are shaded; the grid lies over the shading and under the bars.
  out << bands;
  grid(out, axis, top, y);
  out << bars;
  return y;
}

} // namespace

void write_svg(const Report& r, std::ostream& out) {
  double max_pct = 100, max_flops = 0;
  bool memory = false, compute = false;
  for (const auto& row : r.rows)
    for (const auto& v : row.variants) {
      memory |= row.kind == Kind::Memory;
      compute |= row.kind == Kind::Compute;
      const double rate = row.rate(v);
      if (!std::isfinite(rate)) continue;
      if (row.kind == Kind::Memory) max_pct = std::max(max_pct, 100 * r.of_copy(row, v));
      if (row.kind == Kind::Compute) max_flops = std::max(max_flops, rate);
    }
  // Ticks every 25% up to the copy, or beyond it when a bar passes it; coarser past 200%.
  Axis pct;
  pct.step = max_pct <= 200 ? 25 : nice_step(max_pct, 8);
  pct.max = std::ceil(max_pct / pct.step - 1e-9) * pct.step;
  pct.unit = "%";
  pct.mark = 100;
  pct.mark_label = "= copy";
  // Products in GFLOP/s, or TFLOP/s where they reach a thousand (a GPU's).
  Axis flops;
  flops.scale = max_flops >= 1000 ? 1000.0 : 1.0;
  flops.rate_unit = flops.scale > 1 ? "TFLOP/s" : "GFLOP/s";
  const double flops_top = max_flops / flops.scale * 1.05;
  flops.step = nice_step(flops_top, 5);
  flops.max = std::max(flops.step, std::ceil(flops_top / flops.step) * flops.step);

  std::string body;
  auto text = [&](double x, double y, const char* cls, const std::string& s) {
    fmt::format_to(std::back_inserter(body),
                   "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"{}\">{}</text>\n", x, y, cls, s);
  };
  double y = 36;
  text(kMargin, y, "title",
       xml_escape(fmt::format("tensorjit tj-bench on {}, {}", r.machine, r.date)));
  y += 22;
  text(kMargin, y, "subtitle",
       xml_escape(fmt::format("device {}{}; 1-D workloads of {} floats; a bar is the median time "
                              "of repeated runs (--reps {})",
                              r.device, r.gpu() ? "" : fmt::format(", {} threads", r.threads),
                              count_text(r.size), r.reps)));
  // The legend.
  y += 26;
  double lx = kMargin;
  for (auto [role, label] : {std::pair{Role::Fused, "tensorjit, fused"},
                             std::pair{Role::Unfused, "unfused (TJ_FUSION=0)"},
                             std::pair{Role::Baseline, "outside tensorjit"}}) {
    fmt::format_to(std::back_inserter(body),
                   "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"14\" rx=\"2\" "
                   "class=\"bar {}\"/>\n",
                   lx, y - 11.5, role_class(role));
    text(lx + 20, y, "legend", label);
    lx += 20 + 8.0 * static_cast<double>(std::string(label).size()) + 28;
  }

  std::ostringstream sections;
  if (memory) {
    y += 38;
    text(kMargin, y, "heading",
         xml_escape(fmt::format("Memory-bound workloads: bandwidth as a share of the copy "
                                "measured in the same run ({:.1f} GB/s)",
                                r.copy_gbps)));
    y = section(sections, r, Kind::Memory, pct, y + 32, "memory") + 20;
  }
  if (compute) {
    y += 38;
    text(kMargin, y, "heading",
         fmt::format("Products: {} (a multiply-add counts two)", flops.rate_unit));
    y = section(sections, r, Kind::Compute, flops, y + 32, "compute") + 20;
  }
  std::vector<std::string> notes;
  for (const auto& row : r.rows) {
    if (row.kind != Kind::Latency) continue;
    const Variant& v = row.variants.front();
    notes.push_back(
        row.workload == "compile" ? fmt::format("Compile latency of one fused elementwise kernel: "
                                                "{:.2f} ms (median of {}).",
                                                v.ms, v.samples)
        : row.workload == "op chain"
            ? fmt::format("200 elementwise ops on 16 elements, then sum().item(): {:.1f} \u00b5s "
                          "(median of {}).",
                          v.ms * 1e3, v.samples)
        : row.workload == "materialized op"
            ? fmt::format("The same ops, each materialized: {:.2f} \u00b5s per op (median of {}).",
                          v.ms * 1e3, v.samples)
            : fmt::format("A cache hit, end to end ({}): {:.1f} \u00b5s (median of {}).", row.shape,
                          v.ms * 1e3, v.samples));
  }
  if (r.find("sum"))
    notes.push_back("GB/s count bytes read and written once; sum only reads, so it can pass the "
                    "copy's read+write rate.");
  y += 8;
  for (const auto& n : notes) {
    y += 18;
    text(kMargin, y, "note", xml_escape(n));
  }
  const double height = y + 20;

  fmt::print(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fmt::print(out,
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
             "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
             kWidth, height);
  fmt::print(out,
             "<style>\n"
             ".title {{ font-size: 19px; font-weight: bold; fill: #222; }}\n"
             ".subtitle {{ font-size: 13px; fill: #555; }}\n"
             ".legend {{ font-size: 13px; fill: #333; }}\n"
             ".heading {{ font-size: 15px; font-weight: bold; fill: #222; }}\n"
             ".workload {{ font-size: 14px; font-weight: bold; fill: #222; }}\n"
             ".shape {{ font-size: 12px; fill: #777; }}\n"
             ".variant {{ font-size: 12px; fill: #444; text-anchor: end; }}\n"
             // A halo keeps values legible where they cross grid lines.
             ".value {{ font-size: 12px; font-weight: bold; fill: #222; paint-order: stroke; "
             "stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }}\n"
             ".detail {{ font-weight: normal; fill: #777; }}\n"
             ".tick {{ font-size: 11px; fill: #777; text-anchor: middle; }}\n"
             ".reflabel {{ font-size: 11px; fill: #555; text-anchor: middle; }}\n"
             ".note {{ font-size: 12px; fill: #555; }}\n"
             ".grid {{ stroke: #e2e2e2; stroke-width: 1; }}\n"
             ".base {{ stroke: #999; stroke-width: 1; }}\n"
             ".ref {{ stroke: #555; stroke-width: 1.2; stroke-dasharray: 4 3; }}\n"
             ".band {{ fill: #f6f7f9; }}\n"
             ".fused {{ fill: {}; }}\n"
             ".unfused {{ fill: {}; }}\n"
             ".baseline {{ fill: {}; }}\n"
             "</style>\n",
             color(Role::Fused), color(Role::Unfused), color(Role::Baseline));
  fmt::print(out, "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
  out << body << sections.str() << "</svg>\n";
}

} // namespace tj::bench

// Dense vs event-driven weight kernels on the CPU, layer by layer: for each layer shape and input
// density, the time of the dense path (im2col + GEMM) and of the event path (event_convolution.hpp) on
// the same spike input, their dense-equivalent GMAC/s, the largest difference between their outputs
// (relative to the output's scale), and per layer the break-even density (where the event path stops
// being faster). These are the measurements behind the break-even rule in snn/src/cpu/event_path.cpp.
//
//   kernel_paths [--threads 2] [--samples 256] [--repeat 3] [--seed 1] [--layers NAME,NAME...]
//                [--densities 0.02,0.05,...]
//
// Inputs are spikes of value 1 at independently random positions (a Bernoulli(density) per element).
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <random>
#include <sstream>
#include <stdexcept>

#include "bench_args.hpp"
#include "snn/cpu/kernel.hpp"
#include "snn/layers/conv2d.hpp"
#include "snn/layers/linear.hpp"

using namespace snn;

namespace {

struct LayerCase {
  std::string name;
  int64_t cin, h, w, cout, k, stride, pad;  // k = 0: a linear layer of cin·h·w inputs
};

const std::vector<LayerCase>& all_cases() {
  static const std::vector<LayerCase> cases = {
      {"vgg.conv32", 32, 28, 28, 32, 3, 1, 1},       {"vgg.conv64a", 32, 14, 14, 64, 3, 1, 1},
      {"vgg.conv64b", 64, 14, 14, 64, 3, 1, 1},      {"vgg.fc256", 3136, 1, 1, 256, 0, 1, 0},
      {"r18.layer1", 64, 56, 56, 64, 3, 1, 1},       {"r18.layer2", 128, 28, 28, 128, 3, 1, 1},
      {"r18.layer3", 256, 14, 14, 256, 3, 1, 1},     {"r18.layer4", 512, 7, 7, 512, 3, 1, 1},
      {"r18.down2", 64, 56, 56, 128, 3, 2, 1},       {"r18.short2", 64, 56, 56, 128, 1, 2, 0},
      {"r18.fc", 512, 1, 1, 1000, 0, 1, 0},          {"res.short", 32, 28, 28, 64, 1, 2, 0},
      {"pw.1x1", 64, 28, 28, 128, 1, 1, 0},
  };
  return cases;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

double time_best(cpu::Kernel& k, const Tensor& x, Tensor& out, int64_t n, int repeat) {
  const std::vector<const Tensor*> ins{&x};
  const StepChunk chunk{0, 1, n};
  k.forward_snn(ins, out, nullptr, chunk);  // warm-up (buffers)
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    k.forward_snn(ins, out, nullptr, chunk);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) try {
  int threads = 2, repeat = 3;
  int64_t samples = 256, seed = 1;
  std::vector<std::string> names;
  std::vector<double> densities = {0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--threads") threads = int(bench::parse_int(a, next(), 1));
    else if (a == "--samples") samples = bench::parse_int(a, next(), 1);
    else if (a == "--repeat") repeat = int(bench::parse_int(a, next(), 1));
    else if (a == "--seed") seed = bench::parse_int(a, next(), 0);
    else if (a == "--layers") names = split(next());
    else if (a == "--densities") {
      densities.clear();
      for (const auto& d : split(next())) densities.push_back(bench::parse_double("--densities", d));
    } else throw std::runtime_error("unknown option " + a + " (see the comment at the top of bench/kernel_paths.cpp)");
  }
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerCase& c : all_cases()) {
    if (!names.empty() && std::find(names.begin(), names.end(), c.name) == names.end()) continue;
    std::unique_ptr<Layer> layer;
    Shape in_shape;
    const int64_t fan_in = c.k > 0 ? c.cin * c.k * c.k : c.cin * c.h * c.w;
    std::normal_distribution<float> he(0.0f, std::sqrt(2.0f / float(fan_in)));
    if (c.k > 0) {
      Conv2dSpec s;
      s.in_channels = c.cin, s.out_channels = c.cout, s.kernel_h = s.kernel_w = c.k;
      s.stride_h = s.stride_w = c.stride, s.pad_h = s.pad_w = c.pad;
      Tensor w({c.cout, c.cin, c.k, c.k}), b({c.cout});
      for (auto& v : w.values()) v = he(rng);
      for (auto& v : b.values()) v = 0.01f * he(rng);
      layer = std::make_unique<Conv2d>(c.name, s, w, b);
      in_shape = {c.cin, c.h, c.w};
    } else {
      Tensor w({c.cout, fan_in}), b({c.cout});
      for (auto& v : w.values()) v = he(rng);
      for (auto& v : b.values()) v = 0.01f * he(rng);
      layer = std::make_unique<Linear>(c.name, w, b);
      in_shape = {fan_in};
    }
    auto dense = cpu::make_kernel(*layer, {in_shape});
    auto events = cpu::make_kernel(*layer, {in_shape});
    dense->set_event_policy(EventPolicy::Dense);
    events->set_event_policy(EventPolicy::Events);
    const int64_t macs = layer->macs({in_shape});
    Shape xs = in_shape;
    xs.insert(xs.begin(), samples);
    nlohmann::json rows = nlohmann::json::array();
    double break_even = -1;
    bool events_faster_before = false;
    for (double d : densities) {
      Tensor x(xs, 0.0f);
      std::bernoulli_distribution fire(d);
      for (auto& v : x.values()) v = fire(rng) ? 1.0f : 0.0f;
      Tensor od, oe;
      const double td = time_best(*dense, x, od, samples, repeat);
      const double te = time_best(*events, x, oe, samples, repeat);
      float scale = 0;
      for (float v : od.values()) scale = std::max(scale, std::fabs(v));
      const double rel = double(max_abs_diff(od, oe)) / std::max(1e-30, double(scale));
      rows.push_back({{"density", d},
                      {"dense_seconds", td},
                      {"events_seconds", te},
                      {"speedup_events_over_dense", td / te},
                      {"dense_gmacs_per_second", double(macs) * samples / td / 1e9},
                      {"events_dense_equivalent_gmacs_per_second", double(macs) * samples / te / 1e9},
                      {"max_relative_difference", rel}});
      if (te < td) events_faster_before = true;
      if (te >= td && events_faster_before && break_even < 0) break_even = d;
      std::fprintf(stderr, "%-12s d=%.2f dense %.4fs events %.4fs (x%.2f) rel.diff %.1e\n", c.name.c_str(), d, td, te,
                   td / te, rel);
    }
    layers.push_back({{"layer", c.name},
                      {"input", in_shape},
                      {"out_channels", c.cout},
                      {"kernel", c.k},
                      {"stride", c.stride},
                      {"macs_per_sample", macs},
                      {"break_even_density_at_or_below", break_even},
                      {"rows", rows}});
  }
  nlohmann::json j = {{"benchmark", "kernel_paths"}, {"threads", threads}, {"samples", samples},
                      {"repeat", repeat}, {"layers", layers}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "kernel_paths: error: %s\n", e.what());
  return 1;
}

// Writes a benchmark network with random weights (bench/bench_networks.hpp) as a .snn.h5 model file, and
// optionally a set of random images as an HDF5 dataset that snnc and bench/torch_reference.py both read.
//
//   make_bench_model --net vgg|resnet18 -o OUT.snn.h5 [--seed 1] [--percentile 99.9]
//                    [--threshold-images K] [--images N --data-out OUT_images.h5] [--labels ann|zero]
//                    [--threads 0] [--batch-size B]
//
// Thresholds: per neuron layer, the --percentile (100 = max) of its positive ANN-view activations on K
// random images (default 128 for vgg, 8 for resnet18), computed on the CPU backend. Images: N uniform
// [0,1) float32 images (seed + 2000), `images` N x C x H x W and `labels` N int64. Labels "ann" (default):
// the ANN view's prediction for each image (so "accuracy" measures agreement of the SNN with its CNN,
// which is meaningful for a random network); "zero": all 0. Both files are written to a temporary file
// and renamed. Prints one JSON object (what was written, thresholds, times) on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "bench_h5.hpp"
#include "bench_args.hpp"
#include "bench_networks.hpp"
#include "snn/backend.hpp"
#include "snn/model_file.hpp"

using namespace snn;

namespace {
const char* kUsage =
    "usage: make_bench_model --net vgg|resnet18 -o OUT.snn.h5 [--seed 1] [--percentile 99.9] "
    "[--threshold-images K] [--images N --data-out OUT_images.h5] [--labels ann|zero] [--threads 0] "
    "[--batch-size B]";

[[noreturn]] void usage_error(const std::string& msg) { throw std::runtime_error(msg + "\n" + kUsage); }

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec1, ec2;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a), ec1), pb = fs::weakly_canonical(fs::absolute(b), ec2);
  return !ec1 && !ec2 ? pa == pb : a == b;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) try {
  std::string kind, out, data_out, labels_kind = "ann";
  int64_t seed = 1, n_images = 0, threshold_images = 0, batch_size = 0;
  int threads = 0;
  double percentile = 99.9;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--net") kind = next();
    else if (a == "-o" || a == "--out") out = next();
    else if (a == "--seed") seed = bench::parse_int(a, next(), 0);
    else if (a == "--percentile") percentile = bench::parse_double(a, next());
    else if (a == "--threshold-images") threshold_images = bench::parse_int(a, next(), 1);
    else if (a == "--images") n_images = bench::parse_int(a, next(), 1);
    else if (a == "--data-out") data_out = next();
    else if (a == "--labels") labels_kind = next();
    else if (a == "--threads") threads = int(bench::parse_int(a, next(), 0));
    else if (a == "--batch-size") batch_size = bench::parse_int(a, next(), 1);
    else if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    } else usage_error("unknown option " + a);
  }
  if (kind != "vgg" && kind != "resnet18") usage_error("--net vgg|resnet18 is required");
  if (out.empty()) usage_error("-o OUT.snn.h5 is required");
  if ((n_images > 0) != !data_out.empty()) usage_error("--images N and --data-out PATH go together");
  if (labels_kind != "ann" && labels_kind != "zero") usage_error("--labels must be ann or zero");
  if (!(percentile > 0.0 && percentile <= 100.0)) usage_error("--percentile must be in (0, 100]");
  if (!data_out.empty() && same_file(out, data_out)) usage_error("--data-out and -o name the same file");
  if (threshold_images == 0) threshold_images = bench::default_threshold_images(kind);
  if (batch_size == 0) batch_size = kind == "resnet18" ? 16 : 256;

  const auto t_start = std::chrono::steady_clock::now();
  std::unique_ptr<Backend> cpu = make_backend("cpu", threads, /*quiet=*/true);
  Network net = bench::make_bench_network(kind, uint64_t(seed));
  const Tensor calib = bench::random_images(threshold_images, net.input_shape(), uint64_t(seed) + 1000);
  const std::vector<float> thetas = bench::set_thresholds_from_ann(net, *cpu, calib, percentile);
  net.metadata()["bench.net"] = kind;
  net.metadata()["bench.seed"] = std::to_string(seed);
  char pct[32];
  std::snprintf(pct, sizeof pct, "%gth percentile", percentile);
  net.metadata()["bench.thresholds"] = std::string(percentile >= 100.0 ? "max" : pct) +
                                       " of positive ANN activations on " + std::to_string(threshold_images) +
                                       " random images (seed " + std::to_string(seed + 1000) + ")";
  const double model_seconds = since(t_start);
  save_network(net, out);

  nlohmann::json th = nlohmann::json::object();
  const auto nodes = net.neuron_nodes();
  for (size_t l = 0; l < nodes.size(); ++l) th[net.layer(nodes[l]).name()] = thetas[l];
  nlohmann::json j = {{"tool", "make_bench_model"},
                      {"net", kind},
                      {"model", out},
                      {"seed", seed},
                      {"input_shape", net.input_shape()},
                      {"parameters", net.parameter_count()},
                      {"macs_per_image", net.macs_per_sample()},
                      {"neuron_layers", nodes.size()},
                      {"threshold_percentile", percentile},
                      {"threshold_images", threshold_images},
                      {"thresholds", th},
                      {"model_seconds", model_seconds}};

  if (n_images > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor images = bench::random_images(n_images, net.input_shape(), uint64_t(seed) + 2000);
    std::vector<int64_t> labels(size_t(n_images), 0);
    if (labels_kind == "ann") {
      for (int64_t b0 = 0; b0 < n_images; b0 += batch_size) {
        const int64_t n = std::min(batch_size, n_images - b0);
        const Tensor scores = cpu->forward_ann(net, images.slice0(b0, n));
        const int64_t K = scores.dim(1);
        for (int64_t b = 0; b < n; ++b) {
          int64_t best = 0;  // ties: the lowest class, as snnc's readout
          for (int64_t k = 1; k < K; ++k)
            if (scores[b * K + k] > scores[b * K + best]) best = k;
          labels[size_t(b0 + b)] = best;
        }
      }
    }
    const std::string source = "make_bench_model --net " + kind + " --seed " + std::to_string(seed) +
                               ": uniform [0,1) images (seed " + std::to_string(seed + 2000) + "), labels " +
                               (labels_kind == "ann" ? "= the ANN view's prediction" : "= 0");
    bench::write_dataset_h5(data_out, images, labels, source);
    int64_t distinct = 0;
    {
      std::vector<int64_t> s = labels;
      std::sort(s.begin(), s.end());
      distinct = std::unique(s.begin(), s.end()) - s.begin();
    }
    j["data"] = {{"path", data_out},
                 {"images", n_images},
                 {"labels", labels_kind},
                 {"distinct_labels", distinct},
                 {"seconds", since(t0)}};
  }
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "make_bench_model: error: %s\n", e.what());
  return 1;
}

// Engine throughput: image-timesteps per second of a backend (CPU or CUDA) on a stated network, as JSON.
//
//   engine_throughput [--device cpu|cuda|auto] [--net vgg|resnet18|model PATH] [--model PATH]
//                     [--T 32] [--batch N] [--batches 2] [--threads 0] [--seed 1] [--percentile 99.9]
//                     [--events auto|off|on]
//
// "vgg" is the VGG-style Fashion-MNIST network of examples/train_cnn.py (conv32-conv32-pool-conv64-
// conv64-pool-fc256-fc10), "resnet18" torchvision's ResNet-18 on 3x224x224 (bench/bench_networks.hpp):
// IF neurons, random He weights (--seed) and thresholds set from the ANN view on a CPU (the --percentile
// of each layer's positive activations, 100 = max); both run on random [0,1] images. "model PATH" (or
// --model PATH) measures a real .snn.h5 file as stored. Default batch: 128 (vgg, models), 16 (resnet18).
// One warm-up batch, then --batches timed simulate() calls of the same batch ("seconds"); prepare() and
// the warm-up batch are timed apart ("prepare_seconds", "first_batch_seconds": what a sweep pays once). Spike rates of
// the random network are printed alongside. --events (CPU): the weight kernels' event-driven path
// (auto: chosen per chunk from the input density; off: dense GEMMs only; on: always). "layers": the
// per-node breakdown of the timed simulations (seconds, share, path, input density, and for weight
// layers the dense-equivalent GMAC/s: the ANN's MACs of the work done, over the time taken).
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "bench_args.hpp"
#include "bench_networks.hpp"
#include "snn/backend.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/model_file.hpp"
#include "snn/simulation_plan.hpp"

using namespace snn;

namespace {
[[noreturn]] void usage_error(const std::string& msg) {
  throw std::runtime_error(msg + "\nusage: engine_throughput [--device cpu|cuda|auto] [--net vgg|resnet18|model PATH] "
                                 "[--model PATH] [--T 32] [--batch N] [--batches 2] [--threads 0] [--seed 1] "
                                 "[--percentile 99.9] [--events auto|off|on]");
}
}  // namespace

int main(int argc, char** argv) try {
  std::string net_kind = "vgg", path, device = "cpu";
  int64_t T = 32, batch = 0, batches = 2, seed = 1;
  int threads = 0;
  double percentile = 99.9;
  EventPolicy events = EventPolicy::Auto;
  bool events_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--net") {
      net_kind = next();
      if (net_kind == "model") {
        if (i + 1 >= argc) usage_error("--net model needs a PATH");
        path = argv[++i];
      }
    } else if (a == "--model") {
      net_kind = "model", path = next();
    } else if (a == "--device") {
      device = next();
    } else if (a == "--T") {
      T = bench::parse_int(a, next(), 1);
    } else if (a == "--batch" || a == "--batch-size") {
      batch = bench::parse_int(a, next(), 1);
    } else if (a == "--batches") {
      batches = bench::parse_int(a, next(), 1);
    } else if (a == "--threads") {
      threads = int(bench::parse_int(a, next(), 0));
    } else if (a == "--seed") {
      seed = bench::parse_int(a, next(), 0);
    } else if (a == "--percentile") {
      percentile = bench::parse_double(a, next());
    } else if (a == "--events") {
      events = parse_event_policy(next(), "--events");
      events_given = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("see the comment at the top of bench/engine_throughput.cpp and bench/README.md\n");
      return 0;
    } else {
      usage_error("unknown option " + a);
    }
  }
  if (net_kind != "vgg" && net_kind != "resnet18" && net_kind != "model")
    usage_error("--net must be vgg, resnet18 or model PATH, got '" + net_kind + "'");
  if (device != "cpu" && device != "cuda" && device != "auto")
    usage_error("--device must be cpu, cuda or auto, got '" + device + "'");
  if (batch == 0) batch = net_kind == "resnet18" ? 16 : 128;

  std::unique_ptr<Backend> backend = make_backend(device, threads, /*quiet=*/false);
  auto* cpu_backend = dynamic_cast<CpuBackend*>(backend.get());
  if (cpu_backend && events_given) cpu_backend->set_event_policy(events);
  Network net;
  if (net_kind == "model") {
    net = load_network(path);
  } else {
    net = bench::make_bench_network(net_kind, uint64_t(seed));
    // Thresholds from the ANN view, on the CPU (the same network whatever --device says).
    std::unique_ptr<Backend> cpu = make_backend("cpu", threads, /*quiet=*/true);
    const Tensor calib = bench::random_images(bench::default_threshold_images(net_kind), net.input_shape(),
                                              uint64_t(seed) + 1000);
    bench::set_thresholds_from_ann(net, *cpu, calib, percentile);
  }
  const Tensor images = bench::random_images(batch, net.input_shape(), uint64_t(seed) + 2000);

  SimulationOptions o;
  o.timesteps = T;
  // A sweep pays for prepare() and its first batch (fresh buffers: page faults, zero-filling) once; they
  // are reported apart from the steady batches.
  const auto p0 = std::chrono::steady_clock::now();
  std::unique_ptr<Program> program = backend->prepare(net);
  const auto p1 = std::chrono::steady_clock::now();
  backend->simulate(*program, images, o);  // warm-up (allocations, cuDNN algorithm choice)
  const auto t0 = std::chrono::steady_clock::now();
  const double prepare_s = std::chrono::duration<double>(p1 - p0).count();
  const double first_s = std::chrono::duration<double>(t0 - p1).count();
  BatchSimulation last;
  std::vector<double> node_seconds(size_t(net.size()), 0.0);
  for (int64_t b = 0; b < batches; ++b) {
    last = backend->simulate(*program, images, o);
    for (size_t i = 0; i < last.profile.size(); ++i) node_seconds[i] += last.profile[i].seconds;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  backend->forward_ann(*program, images);  // warm-up
  const auto a0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; ++b) backend->forward_ann(*program, images);
  const double ann_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a0).count();

  nlohmann::json rates = nlohmann::json::object();
  const auto nodes = net.neuron_nodes();
  for (size_t l = 0; l < nodes.size() && l < last.spikes.size(); ++l) {
    double sum = 0;
    for (double v : last.spikes[l]) sum += v;
    rates[net.layer(nodes[l]).name()] = sum / (double(T) * double(batch) * double(numel_of(net.output_shape(nodes[l]))));
  }
  const int resolved_threads = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
  const std::string network = net_kind == "model" ? path
                              : net_kind == "vgg" ? "vgg-fmnist (random weights)"
                                                  : "resnet18-imagenet 3x224x224 (random weights)";
  nlohmann::json j = {{"benchmark", "engine_throughput"},
                      {"backend", backend->name()},
                      {"device_requested", device},
                      {"network", network},
                      {"threads", resolved_threads},
                      {"timesteps", T},
                      {"batch", batch},
                      {"batches", batches},
                      {"seconds", s},
                      {"prepare_seconds", prepare_s},
                      {"first_batch_seconds", first_s},
                      {"image_timesteps_per_second", double(T * batch * batches) / s},
                      {"ann_images_per_second", double(batch * batches) / ann_s},
                      {"macs_per_image", net.macs_per_sample()},
                      {"firing_rate", rates}};
  if (cpu_backend) {
    j["events"] = to_string(cpu_backend->event_policy());
    j["channels_last"] = cpu_backend->channels_last();
  }
  if (!last.profile.empty()) {
    const SimulationPlan plan = make_simulation_plan(net, o, batch);
    double total = 0;
    for (double v : node_seconds) total += v;
    nlohmann::json layers = nlohmann::json::array();
    for (int i = 0; i < net.size(); ++i) {
      const auto& p = last.profile[size_t(i)];
      const double sec = node_seconds[size_t(i)];
      nlohmann::json l = {{"name", net.layer(i).name()},
                          {"type", net.layer(i).type()},
                          {"static", bool(plan.is_static[size_t(i)])},
                          {"seconds", sec},
                          {"share", total > 0 ? sec / total : 0.0}};
      if (!p.path.empty()) l["path"] = p.path;
      if (p.channels_last) l["channels_last"] = true;
      if (p.input_density >= 0) l["input_density"] = p.input_density;
      const double macs = double(plan.macs[size_t(i)]) * double(batch) * double(batches) *
                          (plan.is_static[size_t(i)] ? 1.0 : double(T));
      if (macs > 0 && sec > 0) l["dense_equivalent_gmacs_per_second"] = macs / sec / 1e9;
      layers.push_back(l);
    }
    j["layers"] = layers;
    j["layers_seconds"] = total;
  }
  if (net_kind != "model") {
    j["seed"] = seed;
    j["threshold_percentile"] = percentile;
  }
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "engine_throughput: error: %s\n", e.what());
  return 1;
}

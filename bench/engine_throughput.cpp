// Engine throughput: image-timesteps per second of the CPU backend on a stated network, as JSON.
//
//   engine_throughput [--net vgg|model PATH] [--T 32] [--batch 128] [--batches 2] [--threads 0]
//
// "vgg" is the VGG-style Fashion-MNIST network of examples/train_cnn.py (conv32-conv32-pool-conv64-
// conv64-pool-fc256-fc10, IF neurons, average pooling) with random weights and thresholds set from the
// ANN view (max), on random [0,1] images; "model PATH" measures a real .snn.h5 file. Spike rates of
// the random network are printed alongside: throughput of a dense engine barely depends on them.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "snn/cpu_backend.hpp"
#include "snn/layers/all.hpp"
#include "snn/model_file.hpp"

using namespace snn;

namespace {
Tensor random_tensor(Shape s, std::mt19937& rng, float scale) {
  Tensor t(std::move(s));
  std::normal_distribution<float> n(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t[i] = n(rng);
  return t;
}

Network vgg(std::mt19937& rng) {
  Network net({1, 28, 28});
  auto conv = [&](const std::string& name, int64_t cin, int64_t cout) {
    net.add(std::make_unique<Conv2d>(name, Conv2dSpec{cin, cout, 3, 3, 1, 1, 1, 1, 1},
                                     random_tensor({cout, cin, 3, 3}, rng, std::sqrt(2.0f / float(cin * 9))),
                                     random_tensor({cout}, rng, 0.01f)));
    net.add(std::make_unique<NeuronLayer>(name + ".act", cout, std::vector<float>{1.0f}));
  };
  conv("conv1", 1, 32);
  conv("conv2", 32, 32);
  net.add(std::make_unique<AvgPool2d>("pool1", PoolSpec{}));
  conv("conv3", 32, 64);
  conv("conv4", 64, 64);
  net.add(std::make_unique<AvgPool2d>("pool2", PoolSpec{}));
  net.add(std::make_unique<Flatten>("flatten"));
  net.add(std::make_unique<Linear>("fc1", random_tensor({256, 3136}, rng, std::sqrt(2.0f / 3136)),
                                   random_tensor({256}, rng, 0.01f)));
  net.add(std::make_unique<NeuronLayer>("fc1.act", 256, std::vector<float>{1.0f}));
  net.add(std::make_unique<Linear>("fc2", random_tensor({10, 256}, rng, std::sqrt(2.0f / 256))));
  return net;
}
}  // namespace

int main(int argc, char** argv) try {
  std::string net_kind = "vgg", path;
  int64_t T = 32, batch = 128, batches = 2;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--net") net_kind = next();
    else if (a == "--model") net_kind = "model", path = next();
    else if (a == "--T") T = std::stoll(next());
    else if (a == "--batch") batch = std::stoll(next());
    else if (a == "--batches") batches = std::stoll(next());
    else if (a == "--threads") threads = std::stoi(next());
    else throw std::runtime_error("unknown option " + a);
  }
  std::mt19937 rng(1);
  Network net = net_kind == "model" ? load_network(path) : vgg(rng);
  CpuBackend cpu(threads);
  Shape in = {batch};
  in.insert(in.end(), net.input_shape().begin(), net.input_shape().end());
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  Tensor images(in);
  for (int64_t i = 0; i < images.numel(); ++i) images[i] = u(rng);
  if (net_kind == "vgg") {
    // Thresholds from the ANN view (max of each layer), layer by layer as a converter would.
    std::vector<Tensor> outs;
    cpu.forward_ann(net, images, &outs);
    for (int i : net.neuron_nodes()) {
      float m = 1e-3f;
      for (float v : outs[size_t(i)].values()) m = std::max(m, v);
      net.neuron(i).set_threshold({m});
    }
  }
  SimulationOptions o;
  o.timesteps = T;
  cpu.simulate(net, images, o);  // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  BatchSimulation last;
  for (int64_t b = 0; b < batches; ++b) last = cpu.simulate(net, images, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double ann_t0 = s;
  const auto a0 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batches; ++b) cpu.forward_ann(net, images);
  const double ann_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a0).count();
  (void)ann_t0;

  nlohmann::json rates = nlohmann::json::object();
  const auto nodes = net.neuron_nodes();
  for (size_t l = 0; l < nodes.size(); ++l) {
    double sum = 0;
    for (double v : last.spikes[l]) sum += v;
    rates[net.layer(nodes[l]).name()] = sum / (double(T) * double(batch) * double(numel_of(net.output_shape(nodes[l]))));
  }
  nlohmann::json j = {{"benchmark", "engine_throughput"},
                      {"backend", "cpu"},
                      {"network", net_kind == "model" ? path : "vgg-fmnist (random weights)"},
                      {"threads", cpu.threads()},
                      {"timesteps", T},
                      {"batch", batch},
                      {"batches", batches},
                      {"seconds", s},
                      {"image_timesteps_per_second", double(T * batch * batches) / s},
                      {"ann_images_per_second", double(batch * batches) / ann_s},
                      {"macs_per_image", net.macs_per_sample()},
                      {"firing_rate", rates}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "engine_throughput: error: %s\n", e.what());
  return 1;
}

// Whole networks on both backends (tests/core/test_util.hpp's small_cnn and its variants): the CUDA
// engine must follow the CPU engine exactly: static nodes, chunking, Poisson encoding, counts, readout.
// Exact (dyadic) networks must agree bit for bit in everything: predictions, spikes per layer per step,
// synaptic operations, dense MACs, readout. Networks with random float weights differ only by the
// GEMMs' summation order: ANN logits within 1e-4, and the SNN agrees up to rare threshold ties.
#include <catch2/catch.hpp>

#include "cuda_test_util.hpp"
#include "snn/backend_registry.hpp"
#include "snn/cpu_backend.hpp"
#include "snn/cuda/cuda_backend.hpp"

using namespace snn;

namespace {

struct Variant {
  const char* name;
  SourceActivation act;
  int levels;
  bool maxpool, residual, lif;
};

const Variant kVariants[] = {
    {"relu avgpool", SourceActivation::ReLU, 0, false, false, false},
    {"qcfs maxpool", SourceActivation::QCFS, 4, true, false, false},
    {"clip residual", SourceActivation::Clip, 0, false, true, false},
    {"relu residual maxpool lif", SourceActivation::ReLU, 0, true, true, true},
};

Network variant_net(const Variant& v, std::mt19937& rng, bool exact) {
  Network net = snn_test::small_cnn(rng, v.act, v.levels, v.maxpool, v.residual);
  if (v.lif)
    for (int i : net.neuron_nodes()) {
      NeuronConfig cfg = net.neuron(i).config();
      cfg.model = NeuronModel::LIF;
      cfg.beta = 0.9f;
      net.neuron(i).set_config(cfg);
    }
  if (exact) cuda_test::make_exact(net);
  return net;
}

void require_identical(const BatchSimulation& c, const BatchSimulation& g) {
  REQUIRE(g.timesteps == c.timesteps);
  REQUIRE(g.batch == c.batch);
  REQUIRE(g.predictions == c.predictions);
  REQUIRE(g.spikes == c.spikes);
  REQUIRE(g.weight_nodes == c.weight_nodes);
  REQUIRE(g.synaptic_ops == c.synaptic_ops);
  REQUIRE(g.dense_macs == c.dense_macs);
  REQUIRE(g.readout.shape() == c.readout.shape());
  REQUIRE(g.readout.values() == c.readout.values());
}

double total(const std::vector<std::vector<double>>& v) {
  double s = 0;
  for (const auto& r : v)
    for (double x : r) s += x;
  return s;
}

}  // namespace

TEST_CASE("cuda backend registers with make_backend", "[engine]") {
  auto b = make_backend("cuda", 0, true);
  REQUIRE(b->name() == "cuda");
  REQUIRE(b->description().rfind("cuda: ", 0) == 0);
}

TEST_CASE("cuda engine: exact networks agree bit for bit with the CPU engine", "[engine]") {
  CpuBackend cpu(0);
  cuda::CudaBackend gpu;
  std::mt19937 rng(31);
  for (const auto& v : kVariants) {
    const Network net = variant_net(v, rng, true);
    auto cp = cpu.prepare(net);
    auto gp = gpu.prepare(net);
    for (Encoding enc : {Encoding::Direct, Encoding::Poisson})
      for (int64_t chunk : {0, 3, 1}) {
        INFO(v.name << ", " << to_string(enc) << " encoding, chunk " << chunk);
        const Tensor images = cuda_test::exact_images(6, net.input_shape(), rng);
        SimulationOptions o;
        o.timesteps = 10;
        o.encoding = enc;
        o.seed = 1234;
        o.max_chunk_steps = chunk;
        const BatchSimulation c = cpu.simulate(*cp, images, o);
        const BatchSimulation g = gpu.simulate(*gp, images, o);
        require_identical(c, g);
        REQUIRE(total(c.spikes) > 0);
        // The ANN view too, every node.
        std::vector<Tensor> cn, gn;
        const Tensor cy = cpu.forward_ann(*cp, images, &cn), gy = gpu.forward_ann(*gp, images, &gn);
        REQUIRE(gy.values() == cy.values());
        REQUIRE(gn.size() == cn.size());
        for (size_t i = 0; i < cn.size(); ++i) {
          INFO("node " << i);
          REQUIRE(gn[i].shape() == cn[i].shape());
          REQUIRE(gn[i].values() == cn[i].values());
        }
      }
    // A program serves batches of any size, in any order (buffers grow and are reused).
    for (int64_t B : {9, 2, 9}) {
      const Tensor images = cuda_test::exact_images(B, net.input_shape(), rng);
      SimulationOptions o;
      o.timesteps = 5;
      o.max_chunk_steps = 2;
      require_identical(cpu.simulate(*cp, images, o), gpu.simulate(*gp, images, o));
    }
  }
}

TEST_CASE("cuda engine: random float networks agree with the CPU engine", "[engine]") {
  CpuBackend cpu(0);
  cuda::CudaBackend gpu;
  std::mt19937 rng(32);
  for (const auto& v : kVariants) {
    INFO(v.name);
    const Network net = variant_net(v, rng, false);
    auto cp = cpu.prepare(net);
    auto gp = gpu.prepare(net);
    const Tensor images = snn_test::random_tensor({16, 2, 8, 8}, rng, 0.0f, 1.0f);
    const Tensor cy = cpu.forward_ann(*cp, images), gy = gpu.forward_ann(*gp, images);
    REQUIRE(cy.shape() == gy.shape());
    REQUIRE(max_abs_diff(cy, gy) < 1e-4f);
    SimulationOptions o;
    o.timesteps = 16;
    o.max_chunk_steps = 5;
    const BatchSimulation c = cpu.simulate(*cp, images, o), g = gpu.simulate(*gp, images, o);
    // A spike can flip where a membrane lands within float rounding of θ; such ties are rare.
    double spikes = 0, diff = 0;
    for (size_t l = 0; l < c.spikes.size(); ++l)
      for (size_t t = 0; t < c.spikes[l].size(); ++t) {
        spikes += c.spikes[l][t];
        diff += std::abs(c.spikes[l][t] - g.spikes[l][t]);
      }
    REQUIRE(diff <= 1e-3 * spikes);
    size_t same = 0;
    for (size_t k = 0; k < c.predictions.size(); ++k) same += c.predictions[k] == g.predictions[k];
    REQUIRE(double(same) >= 0.98 * double(c.predictions.size()));
    if (diff == 0) REQUIRE(max_abs_diff(c.readout, g.readout) < 1e-4f);
  }
}

TEST_CASE("cuda backend names the layer that has no CUDA kernel", "[engine]") {
  struct Mystery : Layer {
    using Layer::Layer;
    std::string type() const override { return "mystery"; }
    Shape output_shape(const std::vector<Shape>& in) const override { return in.at(0); }
    LayerRecord to_record() const override { return {type(), name(), {}, {}, {}}; }
    std::unique_ptr<Layer> clone() const override { return std::make_unique<Mystery>(*this); }
  };
  Network net({4});
  net.add(std::make_unique<Mystery>("odd_one"));
  net.add(std::make_unique<Linear>("fc", Tensor({2, 4}, 0.5f)));
  cuda::CudaBackend gpu;
  REQUIRE_THROWS_WITH(gpu.prepare(net), Catch::Contains("odd_one") && Catch::Contains("cuda"));
}

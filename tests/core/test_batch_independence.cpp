// What data-parallel runs rest on (snn/data_parallel.hpp, conversion/shared_batch.hpp): a sample's
// results on the CPU backend do not depend on which other samples share its batch, bit for bit. Batches
// are split at uneven points, so the dense kernels' image blocks and GEMM panels fall differently.
#include <catch2/catch.hpp>

#include "snn/cpu_backend.hpp"
#include "snn/layers/all.hpp"
#include "test_util.hpp"

using namespace snn;
using snn_test::random_tensor;

namespace {
Network wide_cnn(std::mt19937& rng) {
  Network net({6, 10, 10});  // 100 positions: not a multiple of any GEMM panel
  net.add(std::make_unique<Conv2d>("conv1", Conv2dSpec{6, 16, 3, 3, 1, 1, 1, 1, 1},
                                   random_tensor({16, 6, 3, 3}, rng, -0.3f, 0.3f), random_tensor({16}, rng, 0.0f, 0.1f)));
  net.add(std::make_unique<NeuronLayer>("act1", 16, std::vector<float>{1.0f}, SourceActivation::ReLU, 0));
  net.add(std::make_unique<Conv2d>("conv2", Conv2dSpec{16, 24, 3, 3, 1, 1, 1, 1, 1},
                                   random_tensor({24, 16, 3, 3}, rng, -0.2f, 0.2f), random_tensor({24}, rng, 0.0f, 0.1f)));
  net.add(std::make_unique<NeuronLayer>("act2", 24, std::vector<float>{0.8f}, SourceActivation::ReLU, 0));
  net.add(std::make_unique<AvgPool2d>("pool", PoolSpec{2, 2, 2, 2, 0, 0}));
  net.add(std::make_unique<Flatten>("flatten"));
  net.add(std::make_unique<Linear>("fc1", random_tensor({37, 24 * 25}, rng, -0.1f, 0.1f), random_tensor({37}, rng)));
  net.add(std::make_unique<NeuronLayer>("act3", 37, std::vector<float>{1.0f}, SourceActivation::ReLU, 0));
  net.add(std::make_unique<Linear>("fc2", random_tensor({10, 37}, rng, -0.3f, 0.3f), random_tensor({10}, rng)));
  return net;
}

// Rows [first, first + n) of a [B, ...] tensor.
bool same_rows(const Tensor& whole, int64_t first, const Tensor& part) {
  const int64_t per = part.numel() / part.dim(0);
  for (int64_t i = 0; i < part.numel(); ++i)
    if (whole[first * per + i] != part[i]) return false;
  return true;
}
}  // namespace

TEST_CASE("a sample's ANN outputs do not depend on the other samples of its batch", "[engine][data-parallel]") {
  std::mt19937 rng(71);
  const Network net = wide_cnn(rng);
  const Tensor x = random_tensor({23, 6, 10, 10}, rng, 0.0f, 1.0f);
  for (int threads : {1, 2}) {
    CpuBackend cpu(threads);
    std::vector<Tensor> whole, first, rest;
    cpu.forward_ann(net, x, &whole);
    cpu.forward_ann(net, x.slice0(0, 7), &first);
    cpu.forward_ann(net, x.slice0(7, 16), &rest);
    for (int i = 0; i < net.size(); ++i) {
      INFO("node " << net.layer(i).name() << ", " << threads << " threads");
      CHECK(same_rows(whole[size_t(i)], 0, first[size_t(i)]));
      CHECK(same_rows(whole[size_t(i)], 7, rest[size_t(i)]));
    }
  }
}

TEST_CASE("a sample's SNN readout does not depend on the other samples of its batch", "[engine][data-parallel]") {
  // Either path of the weight kernels (which one runs is agreed between processes in data-parallel
  // calibration, see NeuronProbe::combine_counts; a sweep's blocks are fixed).
  std::mt19937 rng(72);
  const Network net = wide_cnn(rng);
  const Tensor x = random_tensor({23, 6, 10, 10}, rng, 0.0f, 1.0f);
  SimulationOptions o;
  o.timesteps = 6;
  o.max_chunk_steps = 4;
  for (EventPolicy policy : {EventPolicy::Dense, EventPolicy::Events}) {
    for (int threads : {1, 2}) {
      INFO("events " << to_string(policy) << ", " << threads << " threads");
      CpuBackend cpu(threads);
      cpu.set_event_policy(policy);
      const BatchSimulation whole = cpu.simulate(net, x, o);
      const BatchSimulation first = cpu.simulate(net, x.slice0(0, 7), o);
      const BatchSimulation rest = cpu.simulate(net, x.slice0(7, 16), o);
      CHECK(same_rows(whole.readout, 0, first.readout));
      CHECK(same_rows(whole.readout, 7, rest.readout));
      double spikes_whole = 0, spikes_parts = 0;
      for (size_t l = 0; l < whole.spikes.size(); ++l)
        for (int64_t t = 0; t < o.timesteps; ++t)
          spikes_whole += whole.spikes[l][size_t(t)], spikes_parts += first.spikes[l][size_t(t)] + rest.spikes[l][size_t(t)];
      CHECK(spikes_whole == spikes_parts);
    }
  }
}

// A calibration batch shared by the processes of a communicator (data-parallel calibration). Each
// process simulates its contiguous share of the batch; the statistics a method bases its update on are
// then combined so that they equal, bit for bit, those of one process holding the whole batch:
//   spike sums are whole multiples of θ_c, so their sum over processes is exact in any order;
//   ANN activations are summed per sample by each process and added in sample order after a gather;
//   the simulation plan (timesteps per chunk) is that of the whole batch on every process.
// With the single-process communicator it is the plain computation over the whole batch.
#pragma once
#include <vector>

#include "snn/communicator.hpp"
#include "snn/network.hpp"
#include "snn/probe.hpp"
#include "snn/simulation_options.hpp"

namespace snn::conversion {

class SharedBatch {
 public:
  // `batch` images in all; throws when there are fewer images than processes.
  SharedBatch(Communicator& comm, int64_t batch);
  Share share() const { return share_; }
  // The same chunking on every process: the plan of the whole batch (unless opts fixes it).
  SimulationOptions simulation(const Network& net, SimulationOptions opts) const;

  // Per-channel mean over the whole batch of the layer's ANN activation.
  std::vector<double> ann_means(NeuronLayerAccess& layer) const;
  // Per-channel spike sums of this process's share -> means over the whole batch (per neuron).
  std::vector<double> spike_means(std::vector<double> sums, int64_t positions) const;
  // Counts a backend bases a choice on -> their totals over the batch (NeuronProbe::combine_counts).
  void combine(std::vector<int64_t>& counts) const { comm_.sum(counts); }

 private:
  Communicator& comm_;
  int64_t batch_;
  Share share_;
};

}  // namespace snn::conversion

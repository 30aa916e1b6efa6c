#include "snn/conversion/shared_batch.hpp"

#include <algorithm>

#include "snn/error.hpp"
#include "snn/simulation_plan.hpp"

namespace snn::conversion {

SharedBatch::SharedBatch(Communicator& comm, int64_t batch)
    : comm_(comm), batch_(batch), share_(share_of(batch, comm.size(), comm.rank())) {
  require(batch >= comm.size(), "calibration batches of " + std::to_string(batch) + " images cannot be shared by " +
                                    std::to_string(comm.size()) + " processes: use a larger --batch-size or fewer processes");
}

SimulationOptions SharedBatch::simulation(const Network& net, SimulationOptions opts) const {
  if (opts.max_chunk_steps <= 0) opts.max_chunk_steps = make_simulation_plan(net, opts, batch_).chunk_steps;
  return opts;
}

std::vector<double> SharedBatch::ann_means(NeuronLayerAccess& layer) const {
  const size_t C = size_t(layer.channels());
  const std::vector<double>& mine = layer.ann_sample_sums();
  require(mine.size() == size_t(share_.size()) * C, "calibration: the ANN reference does not match this share");
  std::vector<double> rows(size_t(batch_) * C, 0.0);  // every sample's row; this process fills its own
  std::copy(mine.begin(), mine.end(), rows.begin() + share_.first * int64_t(C));
  comm_.sum(rows);
  std::vector<double> m(C, 0.0);
  for (size_t k = 0; k < rows.size(); ++k) m[k % C] += rows[k];
  for (auto& v : m) v /= double(batch_ * layer.positions());
  return m;
}

std::vector<double> SharedBatch::spike_means(std::vector<double> sums, int64_t positions) const {
  comm_.sum(sums);
  for (auto& v : sums) v /= double(batch_ * positions);
  return sums;
}

}  // namespace snn::conversion

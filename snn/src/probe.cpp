#include "snn/probe.hpp"

namespace snn {

std::vector<double> NeuronLayerAccess::per_neuron(std::vector<double> sums) {
  const double n = double(chunk().batch * positions());
  for (auto& v : sums) v /= n;
  return sums;
}

std::vector<double> NeuronLayerAccess::ann_channel_means() {
  const std::vector<double>& rows = ann_sample_sums();
  const size_t C = size_t(channels());
  std::vector<double> sums(C, 0.0);
  for (size_t k = 0; k < rows.size(); ++k) sums[k % C] += rows[k];
  return per_neuron(std::move(sums));
}

std::vector<double> NeuronLayerAccess::replay_step(int64_t t, const std::vector<float>& bias, bool commit,
                                                   float nudge) {
  return per_neuron(replay_step_sums(t, bias, commit, nudge));
}

std::vector<double> NeuronLayerAccess::output_channel_means() { return per_neuron(output_channel_sums()); }

}  // namespace snn

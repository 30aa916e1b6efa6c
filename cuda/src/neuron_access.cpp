#include "neuron_access.hpp"

#include "snn/cuda/ops.hpp"
#include "snn/error.hpp"

namespace snn::cuda {

CudaNeuronAccess::CudaNeuronAccess(CudaProgram& prog, Shared& shared, int node, const StepChunk& chunk,
                                   const DeviceTensor& input)
    : prog_(prog), shared_(shared), node_(node), chunk_(chunk), input_(input), kernel_(prog.spiking(node)) {}

const std::vector<double>& CudaNeuronAccess::ann_sample_sums() {
  auto it = shared_.ann_sums.find(node_);
  require(it != shared_.ann_sums.end(), "calibration probe: no ANN reference for layer '" +
                                             prog_.network().layer(node_).name() + "' (wants_ann_reference)");
  return it->second;
}

std::vector<double> CudaNeuronAccess::replay_step_sums(int64_t t, const std::vector<float>& bias, bool commit, float nudge) {
  require(t >= 0 && t < chunk_.steps, "calibration probe: step outside the chunk");
  require(int64_t(bias.size()) == channels(), "calibration probe: bias row has the wrong length");
  auto& st = shared_.shadow[node_];
  if (!st) st = kernel_.make_state(chunk_.batch);
  const DeviceTensor* ann = nullptr;
  if (nudge != 0.0f) {
    auto it = shared_.ann.find(node_);
    require(it != shared_.ann.end(), "calibration probe: a nudged replay needs the ANN reference");
    ann = it->second;
  }
  std::vector<double> sum(size_t(channels()), 0.0);
  kernel_.replay_step(input_, chunk_, t, bias, st.get(), commit, nudge, ann, sum);
  return sum;
}

void CudaNeuronAccess::set_bias(const Tensor& bias, bool constant) {
  require(output_ == nullptr, "calibration probe: set_bias only before the layer runs");
  kernel_.set_bias(bias, constant);
}

const std::vector<double>& CudaNeuronAccess::output_channel_sums() {
  require(output_ != nullptr, "calibration probe: output statistics only after the layer ran");
  if (out_sums_.empty()) {
    const int64_t C = channels(), B = chunk_.batch, inner = output_->numel() / (chunk_.steps * B * C);
    out_sums_ = channel_sums(output_->data(), chunk_.steps, B, C, inner, *prog_.context);
  }
  return out_sums_;
}

}  // namespace snn::cuda

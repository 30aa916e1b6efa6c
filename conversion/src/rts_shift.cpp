#include "snn/conversion/rts_shift.hpp"

#include "snn/error.hpp"

namespace snn::conversion {

CalibrationReport RtsShiftCalibrator::calibrate(Network& net, Backend&, const Dataset&,
                                                const CalibrationOptions& opts) const {
  check_calibration_options(opts, nullptr);
  const int64_t T = opts.timesteps;
  for (int node : net.neuron_nodes()) {
    NeuronLayer& layer = net.neuron(node);
    const int64_t C = layer.channels();
    Tensor bias({T, C});
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c)
        bias[t * C + c] = -layer.spike_threshold(c) / float(2 * T) +
                          (t == 0 ? layer.config().v_init * layer.spike_threshold(c) : 0.0f);
    layer.set_bias(std::move(bias));
  }
  CalibrationReport r;
  r.method = name();
  r.parameters = {{"T", std::to_string(T)}};
  return r;
}

}  // namespace snn::conversion

// ChannelGather: builds its output channel by channel from the channels of one or more inputs:
// output channel c = channel source_channel[c] of input source_input[c]. One layer for every op that
// only moves channels: concatenation (torch.cat on dim 1), chunk/split/slicing (a range of one input),
// channel shuffle (a permutation), and any composition of them (cat followed by a shuffle is one
// gather). Inputs are [C_i, H, W] with equal H, W, or vectors [F_i] (one value per channel).
//
// SNN view: it only moves values, so spikes stay spikes (preserves_events) and it is stateless.
#pragma once
#include "snn/layer.hpp"

namespace snn {

class ChannelGather : public Layer {
 public:
  // source_input[c] in [0, inputs), source_channel[c] a channel of that input; equal lengths (≥ 1).
  ChannelGather(std::string name, int inputs, std::vector<int64_t> source_input, std::vector<int64_t> source_channel);
  // Concatenation of inputs with the given channel counts, in order.
  static ChannelGather concat(std::string name, const std::vector<int64_t>& channels_per_input);

  std::string type() const override { return "channel_gather"; }
  int arity() const override { return inputs_; }
  Shape output_shape(const std::vector<Shape>& inputs) const override;
  bool preserves_events() const override { return true; }
  // "concat of 3 inputs (24+24+48 channels)", "channels 58..115", "permutation of 116 channels", or
  // "gather of ...". The layer does not know its inputs' channel counts, so a range or permutation of the
  // first channels of a larger input reads the same.
  std::string summary() const override;
  LayerRecord to_record() const override;
  std::unique_ptr<Layer> clone() const override { return std::make_unique<ChannelGather>(*this); }
  static std::unique_ptr<Layer> from_record(const LayerRecord& r);

  const std::vector<int64_t>& source_input() const { return source_input_; }
  const std::vector<int64_t>& source_channel() const { return source_channel_; }

 private:
  int inputs_;
  std::vector<int64_t> source_input_, source_channel_;
};

}  // namespace snn

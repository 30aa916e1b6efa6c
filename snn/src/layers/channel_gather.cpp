#include "snn/layers/channel_gather.hpp"

#include <cmath>

#include "snn/error.hpp"

namespace snn {

ChannelGather::ChannelGather(std::string name, int inputs, std::vector<int64_t> source_input,
                             std::vector<int64_t> source_channel)
    : Layer(std::move(name)),
      inputs_(inputs),
      source_input_(std::move(source_input)),
      source_channel_(std::move(source_channel)) {
  if (inputs_ < 1) fail("needs at least one input, given " + std::to_string(inputs_));
  if (source_input_.empty()) fail("selects no channels");
  if (source_input_.size() != source_channel_.size())
    fail("source_input has " + std::to_string(source_input_.size()) + " entries, source_channel " +
         std::to_string(source_channel_.size()));
  for (size_t c = 0; c < source_input_.size(); ++c) {
    if (source_input_[c] < 0 || source_input_[c] >= inputs_)
      fail("output channel " + std::to_string(c) + " reads input " + std::to_string(source_input_[c]) + " of " +
           std::to_string(inputs_));
    if (source_channel_[c] < 0)
      fail("output channel " + std::to_string(c) + " reads channel " + std::to_string(source_channel_[c]));
  }
}

ChannelGather ChannelGather::concat(std::string name, const std::vector<int64_t>& channels_per_input) {
  std::vector<int64_t> in, ch;
  for (size_t i = 0; i < channels_per_input.size(); ++i)
    for (int64_t c = 0; c < channels_per_input[i]; ++c) {
      in.push_back(int64_t(i));
      ch.push_back(c);
    }
  return ChannelGather(std::move(name), int(channels_per_input.size()), std::move(in), std::move(ch));
}

Shape ChannelGather::output_shape(const std::vector<Shape>& inputs) const {
  if (int(inputs.size()) != inputs_)
    fail("expects " + std::to_string(inputs_) + " inputs, given " + std::to_string(inputs.size()));
  const Shape& first = inputs[0];
  if (first.size() != 1 && first.size() != 3) fail("inputs must be [C, H, W] or [F], got " + to_string(first));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i];
    if (s.size() != first.size())
      fail("inputs mix ranks: " + to_string(first) + " and " + to_string(s) + " (input " + std::to_string(i) + ")");
    if (s.size() == 3 && (s[1] != first[1] || s[2] != first[2]))
      fail("inputs differ in height or width: " + to_string(first) + " and " + to_string(s) + " (input " +
           std::to_string(i) + ")");
    if (numel_of(s) <= 0) fail("input " + std::to_string(i) + " is empty: " + to_string(s));
  }
  for (size_t c = 0; c < source_input_.size(); ++c) {
    const Shape& s = inputs[size_t(source_input_[c])];
    if (source_channel_[c] >= s[0])
      fail("output channel " + std::to_string(c) + " reads channel " + std::to_string(source_channel_[c]) +
           " of input " + std::to_string(source_input_[c]) + ", which has " + std::to_string(s[0]) + " channels");
  }
  Shape out = first;
  out[0] = int64_t(source_input_.size());
  return out;
}

std::string ChannelGather::summary() const {
  const size_t n = source_input_.size();
  // A concatenation: each input once, in order, from channel 0 up.
  std::vector<int64_t> runs;
  bool concat = true;
  for (size_t c = 0; c < n && concat; ++c) {
    const bool starts = c == 0 || source_input_[c] != source_input_[c - 1];
    if (starts) {
      concat = source_input_[c] == int64_t(runs.size()) && source_channel_[c] == 0;
      runs.push_back(1);
    } else {
      concat = source_channel_[c] == source_channel_[c - 1] + 1;
      ++runs.back();
    }
  }
  concat = concat && int(runs.size()) == inputs_;
  if (concat && inputs_ > 1) {
    std::string s = "concat of " + std::to_string(inputs_) + " inputs (";
    for (size_t i = 0; i < runs.size(); ++i) s += (i ? "+" : "") + std::to_string(runs[i]);
    return s + " channels)";
  }
  if (inputs_ == 1) {
    bool range = true;
    for (size_t c = 1; c < n; ++c) range = range && source_channel_[c] == source_channel_[c - 1] + 1;
    if (range) return "channels " + std::to_string(source_channel_[0]) + ".." + std::to_string(source_channel_.back());
    std::vector<char> seen(n, 0);
    bool perm = true;
    for (int64_t c : source_channel_) {
      perm = perm && c < int64_t(n) && !seen[size_t(c)];
      if (perm) seen[size_t(c)] = 1;
    }
    if (perm) return "permutation of " + std::to_string(n) + " channels";
  }
  return "gather of " + std::to_string(n) + " channels from " + std::to_string(inputs_) +
         (inputs_ == 1 ? " input" : " inputs");
}

LayerRecord ChannelGather::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  const int64_t n = int64_t(source_input_.size());
  // Float tensors hold the indices exactly (integers below 2^24).
  r.tensors["source_input"] = Tensor({n}, std::vector<float>(source_input_.begin(), source_input_.end()));
  r.tensors["source_channel"] = Tensor({n}, std::vector<float>(source_channel_.begin(), source_channel_.end()));
  r.numbers["inputs"] = double(inputs_);
  return r;
}

std::unique_ptr<Layer> ChannelGather::from_record(const LayerRecord& r) {
  auto indices = [&](const std::string& key) {
    const Tensor& t = r.tensor(key);
    if (t.rank() != 1)
      throw Error("layer '" + r.name + "' (" + r.type + "): '" + key + "' must be a vector, got " +
                  to_string(t.shape()));
    std::vector<int64_t> v;
    for (float f : t.values()) {
      if (!(std::isfinite(f) && f == std::floor(f) && std::fabs(f) < 16777216.0f))
        throw Error("layer '" + r.name + "' (" + r.type + "): '" + key + "' holds a non-integer index");
      v.push_back(int64_t(f));
    }
    return v;
  };
  const double inputs = r.number("inputs");
  if (!(inputs >= 1 && inputs < 1e6 && inputs == std::floor(inputs)))
    throw Error("layer '" + r.name + "' (" + r.type + "): invalid input count");
  return std::make_unique<ChannelGather>(r.name, int(inputs), indices("source_input"), indices("source_channel"));
}

namespace {
const bool registered_channel_gather = register_layer_type("channel_gather", ChannelGather::from_record);
}  // namespace

}  // namespace snn

#include "snn/model_fields.hpp"

#include <map>
#include <vector>

#include "snn/error.hpp"
#include "snn/limits.hpp"

namespace snn {

namespace {

// One field's allowed values: whole numbers in [lo, hi], or reals in a RealRange.
struct FieldRule {
  std::string key;
  bool whole;
  WholeRange counts;
  RealRange reals;
};

constexpr int64_t kMaxExtent = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxLevels = int64_t{1} << 24;

FieldRule count(const std::string& key, int64_t lo, int64_t hi = kMaxExtent) { return {key, true, {lo, hi}, {}}; }
FieldRule flag(const std::string& key) { return {key, true, {0, 1}, {}}; }
FieldRule real(const std::string& key, RealRange r) { return {key, false, {}, r}; }

std::vector<FieldRule> pool_rules() {
  return {count("kernel_h", 1), count("kernel_w", 1),   count("stride_h", 1),        count("stride_w", 1),
          count("pad_h", 0),    count("pad_w", 0),      flag("ceil_mode"), flag("count_include_pad")};
}

// Fields absent from a record are the layer's own business (it says "missing attribute"); unknown
// fields are ignored, as the layers ignore them.
const std::map<std::string, std::vector<FieldRule>>& rules() {
  static const std::map<std::string, std::vector<FieldRule>> r = {
      {"conv2d",
       {count("in_channels", 1), count("out_channels", 1), count("kernel_h", 1), count("kernel_w", 1),
        count("stride_h", 1), count("stride_w", 1), count("pad_h", 0), count("pad_w", 0), count("groups", 1)}},
      {"avgpool2d", pool_rules()},
      {"maxpool2d", pool_rules()},
      {"adaptive_avgpool2d", {count("out_h", 1), count("out_w", 1)}},
      {"upsample_nearest",
       {count("out_h", 1), count("out_w", 1), real("scale_h", {0.0, 1e6, true}), real("scale_w", {0.0, 1e6, true}),
        flag("exact")}},
      {"channel_gather", {count("inputs", 1, 1000000)}},
      {"neuron",
       {count("channels", 1), count("levels", 0, kMaxLevels), real("beta", limits::kBeta),
        real("v_init", limits::kVInit), flag("bias_constant"), count("max_spikes", 1, kMaxLevels),
        real("threshold_scale", {0.0, 1e6, true})}},
  };
  return r;
}

std::string where(const LayerRecord& r) { return "layer '" + r.name + "' (" + r.type + ")"; }

void check_numbers(const LayerRecord& r) {
  auto it = rules().find(r.type);
  if (it == rules().end()) return;
  for (const FieldRule& rule : it->second) {
    auto field = r.numbers.find(rule.key);
    if (field == r.numbers.end()) continue;
    const std::string problem =
        rule.whole ? range_problem(field->second, rule.counts) : range_problem(field->second, rule.reals);
    if (!problem.empty()) throw Error(where(r) + ": field '" + rule.key + "' " + problem);
  }
}

void check_tensors_not_empty(const LayerRecord& r) {
  for (const auto& [key, t] : r.tensors) {
    bool empty = t.numel() == 0;
    for (int64_t d : t.shape()) empty = empty || d <= 0;
    if (empty)
      throw Error(where(r) + ": field '" + key + "' is empty (shape " + to_string(t.shape()) + "); a layer " +
                  (key == "bias" ? "without a bias has no 'bias' dataset" : "needs its values there"));
  }
}

// A linear weight is [out, in] and its bias [out]: a weight whose second extent is the bias's length was
// stored transposed (PyTorch's weight.T), which is not a bias problem.
void check_linear_weight(const LayerRecord& r) {
  auto w = r.tensors.find("weight"), b = r.tensors.find("bias");
  if (w == r.tensors.end()) return;
  const Shape& ws = w->second.shape();
  if (ws.size() != 2) throw Error(where(r) + ": field 'weight' must be [out, in], got " + to_string(ws));
  if (b == r.tensors.end() || b->second.rank() != 1 || b->second.dim(0) == ws[0]) return;
  const int64_t out = b->second.dim(0);
  if (ws[1] == out)
    throw Error(where(r) + ": field 'weight' is " + to_string(ws) + " but the bias has " + std::to_string(out) +
                " outputs: the weight looks transposed (expected [" + std::to_string(out) + ", " +
                std::to_string(ws[0]) + "], [out, in])");
}

}  // namespace

void check_record_fields(const LayerRecord& r) {
  check_numbers(r);
  check_tensors_not_empty(r);
  if (r.type == "linear") check_linear_weight(r);
}

void check_linear_input(const LayerRecord& r, int64_t features) {
  auto w = r.tensors.find("weight");
  if (r.type != "linear" || w == r.tensors.end() || w->second.rank() != 2) return;
  const Shape& ws = w->second.shape();
  if (ws[1] != features && ws[0] == features)
    throw Error(where(r) + ": field 'weight' is " + to_string(ws) + " for " + std::to_string(features) +
                " input features: the weight looks transposed (expected [" + std::to_string(ws[1]) + ", " +
                std::to_string(features) + "], [out, in])");
}

void check_preprocessing_fields(const Preprocessing& p) {
  for (size_t c = 0; c < p.mean.size(); ++c) {
    const std::string problem = range_problem(double(p.mean[c]), limits::kMean);
    if (!problem.empty()) throw Error("preprocessing: field 'mean' (channel " + std::to_string(c) + ") " + problem);
  }
  for (size_t c = 0; c < p.std.size(); ++c) {
    const std::string problem = range_problem(double(p.std[c]), limits::kStd);
    if (!problem.empty()) throw Error("preprocessing: field 'std' (channel " + std::to_string(c) + ") " + problem);
  }
}

}  // namespace snn

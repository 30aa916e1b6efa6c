#include "snn/layers/upsample.hpp"

#include <cmath>
#include <sstream>

#include "snn/error.hpp"

namespace snn {

namespace {
// PyTorch's source index (aten/src/ATen/native/UpSample.h), in float: nearest_idx for "nearest", with
// its shortcuts (out == in copies, out == 2·in halves: no float arithmetic), and
// nearest_neighbor_exact_compute_source_index for "nearest-exact". torch 2.x takes the shortcuts in every
// CPU kernel (torch 1.13's contiguous kernel did not: it used the formula, which differs for scale factors
// such as 2.05 on 13 rows or 1.04 on 20; tests/fixtures/layer_reference.h5 holds such cases).
std::vector<int64_t> source_index(int64_t in, int64_t out, float scale, bool exact) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  if (!exact && (out == in || out == 2 * in)) {
    for (int64_t y = 0; y < out; ++y) idx[size_t(y)] = out == in ? y : y >> 1;
    return idx;
  }
  for (int64_t y = 0; y < out; ++y) {
    const float pos = exact ? (float(y) + 0.5f) * scale : float(y) * scale;
    const int64_t s = static_cast<int64_t>(std::floor(pos));
    idx[size_t(y)] = s < in - 1 ? s : in - 1;
  }
  return idx;
}
}  // namespace

UpsampleNearest::UpsampleNearest(std::string name, UpsampleSpec spec) : Layer(std::move(name)), spec_(spec) {
  if (spec_.out_h <= 0 || spec_.out_w <= 0)
    fail("output size " + std::to_string(spec_.out_h) + "x" + std::to_string(spec_.out_w) + " must be positive");
  if (!(spec_.scale_h > 0.0f && std::isfinite(spec_.scale_h) && spec_.scale_w > 0.0f && std::isfinite(spec_.scale_w)))
    fail("scales must be positive and finite");
}

Shape UpsampleNearest::output_shape(const std::vector<Shape>& inputs) const {
  if (inputs.size() != 1 || inputs[0].size() != 3) fail("expects one input of shape [C, H, W]");
  const Shape& in = inputs[0];
  if (in[1] <= 0 || in[2] <= 0) fail("input " + to_string(in) + " has an empty plane");
  return {in[0], spec_.out_h, spec_.out_w};
}

std::vector<int64_t> UpsampleNearest::source_rows(int64_t in_h) const {
  return source_index(in_h, spec_.out_h, spec_.scale_h, spec_.exact);
}

std::vector<int64_t> UpsampleNearest::source_cols(int64_t in_w) const {
  return source_index(in_w, spec_.out_w, spec_.scale_w, spec_.exact);
}

std::string UpsampleNearest::summary() const {
  std::ostringstream os;
  os << "to " << spec_.out_h << "x" << spec_.out_w << " (scale " << spec_.scale_h << "x" << spec_.scale_w << ")"
     << (spec_.exact ? " nearest-exact" : " nearest");
  return os.str();
}

LayerRecord UpsampleNearest::to_record() const {
  LayerRecord r;
  r.type = type();
  r.name = name();
  r.numbers = {{"out_h", double(spec_.out_h)},
               {"out_w", double(spec_.out_w)},
               {"scale_h", double(spec_.scale_h)},
               {"scale_w", double(spec_.scale_w)},
               {"exact", spec_.exact ? 1.0 : 0.0}};
  return r;
}

std::unique_ptr<Layer> UpsampleNearest::from_record(const LayerRecord& r) {
  UpsampleSpec s;
  s.out_h = r.count("out_h");
  s.out_w = r.count("out_w");
  s.scale_h = float(r.number("scale_h"));  // written from a float: exact
  s.scale_w = float(r.number("scale_w"));
  s.exact = r.number("exact") != 0.0;
  return std::make_unique<UpsampleNearest>(r.name, s);
}

namespace {
const bool registered_upsample_nearest = register_layer_type("upsample_nearest", UpsampleNearest::from_record);
}  // namespace

}  // namespace snn

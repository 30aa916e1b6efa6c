// The CPU kernels of pooling and upsampling against PyTorch's own outputs (tests/fixtures/
// layer_reference.h5, written by tests/fixtures/make_layer_reference.py): ceil_mode, padding and
// count_include_pad variants of avg/max pooling, uneven adaptive average pooling, and nearest /
// nearest-exact interpolation given by size and by scale factor.
#include <catch2/catch.hpp>
#include <cmath>

#include "snn/hdf5_util.hpp"
#include "test_util.hpp"

using namespace snn;

namespace {
const std::string kReference = std::string(SNN_TEST_DIR) + "/fixtures/layer_reference.h5";

struct Case {
  std::string name;
  Tensor x, y;
  H5::Group group;
};

std::vector<Case> cases(const std::string& kind) {
  H5::H5File f(kReference, H5F_ACC_RDONLY);
  H5::Group g = f.openGroup(kind);
  std::vector<Case> r;
  for (const auto& name : h5::child_names(g)) {
    H5::Group c = g.openGroup(name);
    r.push_back({kind + "/" + name, h5::read_tensor(c, "x"), h5::read_tensor(c, "y"), c});
  }
  REQUIRE(r.size() >= 6);
  return r;
}

PoolSpec pool_spec(const H5::Group& g) {
  const auto k = h5::read_int_array_attr(g, "kernel"), s = h5::read_int_array_attr(g, "stride"),
             p = h5::read_int_array_attr(g, "padding");
  PoolSpec spec{k[0], k[1], s[0], s[1], p[0], p[1]};
  spec.ceil_mode = h5::read_double_attr(g, "ceil_mode") != 0;
  spec.count_include_pad = h5::read_double_attr(g, "count_include_pad") != 0;
  return spec;
}

void require_close(const Layer& layer, const Case& c, float tolerance) {
  INFO(c.name << ": " << layer.summary());
  Tensor out;
  snn_test::ann(layer, {&c.x}, out);
  REQUIRE(out.shape() == c.y.shape());
  if (tolerance == 0.0f)
    REQUIRE(out.values() == c.y.values());
  else
    REQUIRE(max_abs_diff(out, c.y) <= tolerance);
}
}  // namespace

TEST_CASE("avg pooling matches PyTorch (ceil_mode, padding, count_include_pad)", "[layers][reference]") {
  int ceil_cases = 0, excluded_pad = 0;
  for (const Case& c : cases("avgpool")) {
    const PoolSpec s = pool_spec(c.group);
    ceil_cases += s.ceil_mode;
    excluded_pad += !s.count_include_pad && (s.pad_h || s.pad_w);
    require_close(AvgPool2d("avg", s), c, 1e-6f);
  }
  REQUIRE(ceil_cases >= 5);
  REQUIRE(excluded_pad >= 3);
}

TEST_CASE("max pooling matches PyTorch (ceil_mode)", "[layers][reference]") {
  int ceil_cases = 0;
  for (const Case& c : cases("maxpool")) {
    const PoolSpec s = pool_spec(c.group);
    ceil_cases += s.ceil_mode;
    require_close(MaxPool2d("max", s), c, 0.0f);
  }
  REQUIRE(ceil_cases >= 3);  // the fixture must exercise the mode this test is about
}

TEST_CASE("adaptive average pooling matches PyTorch (uneven windows)", "[layers][reference]") {
  int uneven = 0;
  for (const Case& c : cases("adaptive_avgpool")) {
    const auto out = h5::read_int_array_attr(c.group, "out_size");
    uneven += c.x.dim(2) % out[0] != 0 || c.x.dim(3) % out[1] != 0;
    require_close(AdaptiveAvgPool2d("gap", out[0], out[1]), c, 1e-6f);
  }
  REQUIRE(uneven >= 3);  // windows that no ordinary average pool could express
}

TEST_CASE("nearest and nearest-exact upsampling match PyTorch exactly", "[layers][reference]") {
  int exact = 0, down = 0;
  for (const Case& c : cases("upsample")) {
    H5::Attribute a = c.group.openAttribute("scale");
    double scale[2];
    a.read(H5::PredType::NATIVE_DOUBLE, scale);
    const auto out = h5::read_int_array_attr(c.group, "out_size");
    UpsampleSpec s{out[0], out[1], float(scale[0]), float(scale[1]), h5::read_double_attr(c.group, "exact") != 0};
    REQUIRE(double(s.scale_h) == scale[0]);  // the generator stored float32 values
    exact += s.exact;
    down += out[0] < c.x.dim(2);
    require_close(UpsampleNearest("up", s), c, 0.0f);
  }
  REQUIRE(exact >= 6);
  REQUIRE(down >= 2);
}

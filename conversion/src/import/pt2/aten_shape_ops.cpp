// ATen -> canonical: cat, split/split_with_sizes/chunk (multi-result), slice/narrow, nearest upsampling,
// and getitem where a serialized graph still has one.
#include <algorithm>
#include <limits>

#include "import/pt2/aten_ops.hpp"
#include "import/pt2/common.hpp"

namespace snn::conversion::pt2 {

namespace {

using Ints = std::vector<int64_t>;

void cat(NodeContext& c) {
  std::vector<int> in = c.tensors("tensors");
  for (int id : in)
    if (id < 0) c.fail("concatenates a None");
  c.emit("cat", std::move(in), {{"dim", c.i64("dim", 0)}});
}

// The size of x along dim (negative dims count from the end).
int64_t dim_size(NodeContext& c, int x, int64_t& dim) {
  const int64_t r = c.rank_of(x);
  if (dim < 0) dim += r;
  if (dim < 0 || dim >= r) c.fail("dim " + std::to_string(dim) + " is outside a rank-" + std::to_string(r) + " tensor");
  return c.b.shape(x)[size_t(dim)];
}

void emit_split(NodeContext& c, int x, int64_t dim, const Ints& sizes) {
  size_t outputs = 0;
  for (const std::string& o : c.node.outputs) outputs += !o.empty();
  if (sizes.size() != outputs || outputs != c.node.outputs.size())
    c.fail("splits into " + std::to_string(sizes.size()) + " parts but the program lists " + std::to_string(c.node.outputs.size()) + " results");
  c.emit_all("split", {x}, {{"dim", dim}, {"sizes", sizes}});
}

// split.Tensor(split_size) and chunk(chunks): equal parts along dim, the last one smaller.
void split_equal(NodeContext& c, int x, int64_t dim, int64_t part) {
  const int64_t size = dim_size(c, x, dim);
  if (part <= 0 && size > 0) c.fail("splits into parts of size " + std::to_string(part));
  // As many parts as the program lists results, checked before they are built (size may be 2^40).
  const int64_t parts = size == 0 ? 1 : size / part + (size % part != 0);
  if (parts != int64_t(c.node.outputs.size()))
    c.fail("splits into " + std::to_string(parts) + " parts but the program lists " + std::to_string(c.node.outputs.size()) + " results");
  Ints sizes;
  for (int64_t left = size; left > 0; left -= part) sizes.push_back(std::min(part, left));
  if (sizes.empty()) sizes.push_back(0);
  emit_split(c, x, dim, sizes);
}

void split(NodeContext& c) { split_equal(c, c.tensor("self"), c.i64("dim", 0), c.i64("split_size")); }

void chunk(NodeContext& c) {
  const int x = c.tensor("self");
  int64_t dim = c.i64("dim", 0);
  const int64_t chunks = c.i64("chunks"), size = dim_size(c, x, dim);
  if (chunks <= 0) c.fail("splits into " + std::to_string(chunks) + " chunks");
  split_equal(c, x, dim, std::max<int64_t>(1, size / chunks + (size % chunks != 0)));
}

void split_with_sizes(NodeContext& c) {
  const int x = c.tensor("self");
  int64_t dim = c.i64("dim", 0);
  const Ints sizes = c.ints("split_sizes");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > kMaxElements) c.fail("has a split size of " + std::to_string(s));
    total += s;
  }
  if (total != dim_size(c, x, dim)) c.fail("split sizes add up to " + std::to_string(total) + ", not the size of dim " + std::to_string(dim));
  emit_split(c, x, dim, sizes);
}

// slice(dim, start, end, step): negative bounds count from the end; end may exceed the size.
void emit_slice(NodeContext& c, int x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  if (step < 1) c.fail("slices with step " + std::to_string(step));
  const snn::Shape& s = c.b.shape(x);
  const int64_t r = int64_t(s.size());
  const int64_t d = dim < 0 ? dim + r : dim;
  const bool known = d >= 0 && d < r;
  int64_t b = start.value_or(0), e = end.value_or(std::numeric_limits<int64_t>::max());
  if (known) {
    const int64_t n = s[size_t(d)];
    if (b < 0) b = std::max<int64_t>(b + n, 0);
    if (e < 0) e = std::max<int64_t>(e + n, 0);
    b = std::min(b, n), e = std::min(e, n);
  }
  c.emit("slice", {x}, {{"dim", dim}, {"start", b}, {"end", e}, {"step", step}});
}

void slice(NodeContext& c) {
  std::optional<int64_t> start, end;
  if (c.given("start")) start = c.i64("start");
  if (c.given("end")) end = c.i64("end");
  emit_slice(c, c.tensor("self"), c.i64("dim", 0), start, end, c.i64("step", 1));
}

void narrow(NodeContext& c) {
  const int x = c.tensor("self");
  int64_t dim = c.i64("dim"), start = c.i64("start");
  const int64_t length = c.i64("length"), size = dim_size(c, x, dim);
  if (start < 0) start += size;
  if (start < 0 || start > size || length < 0 || length > size - start)
    c.fail("narrows dim " + std::to_string(dim) + " of size " + std::to_string(size) + " to [" + std::to_string(start) + ", +" +
           std::to_string(length) + ")");
  emit_slice(c, x, dim, start, start + length, 1);
}

// upsample_nearest2d(.vec/.default) and _upsample_nearest_exact2d: output size from the arguments or the
// output's recorded shape; scales 0 where not given.
void upsample(NodeContext& c, bool exact) {
  const char* in = c.given("input") ? "input" : "self";
  Ints size = c.given("output_size") ? c.pair("output_size") : Ints{};
  std::vector<double> scales = c.floats("scale_factors");
  if (scales.empty() && (c.given("scales_h") || c.given("scales_w"))) scales = {c.f64("scales_h", 0.0), c.f64("scales_w", 0.0)};
  if (scales.size() == 1) scales.push_back(scales[0]);
  if (scales.empty()) scales = {0.0, 0.0};
  if (scales.size() != 2) c.fail("has " + std::to_string(scales.size()) + " scale factors, expected 2");
  auto it = c.b.program.tensors.find(c.node.outputs.empty() ? "" : c.node.outputs[0]);
  if (size.empty() && it != c.b.program.tensors.end() && it->second.shape.size() == 4)
    size = {it->second.shape[2], it->second.shape[3]};
  if (size.empty()) c.fail("neither the arguments nor the program give the output size");
  c.emit("upsample_nearest", {c.tensor(in)}, {{"output_size", size}, {"scales", scales}, {"exact", int64_t(exact)}});
}
void upsample_nearest(NodeContext& c) { upsample(c, false); }
void upsample_nearest_exact(NodeContext& c) { upsample(c, true); }

// getitem(tuple, i): the serializer folds these into their producer; one left over names a result.
void getitem(NodeContext& c) {
  if (c.node.args.size() != 2 || c.node.args[0].second.kind != Arg::Kind::Tensor) c.fail("is not getitem(node, index)");
  const std::string& producer = c.node.args[0].second.tensor;
  auto it = c.b.outputs_of.find(producer);
  if (it == c.b.outputs_of.end()) return c.identity(c.b.value(producer));
  const int64_t i = c.i64(c.node.args[1].first);
  if (i < 0 || i >= int64_t(it->second.size()) || it->second[size_t(i)].empty())
    c.fail("takes result " + std::to_string(i) + " of '" + producer + "', which has " + std::to_string(it->second.size()));
  c.identity(c.b.value(it->second[size_t(i)]));
}

}  // namespace

void add_shape_ops(MapperTable& t) {
  for (const char* k : {"aten.cat.default", "aten.concat.default", "aten.concatenate.default"}) t[k] = cat;
  for (const char* k : {"aten.split.Tensor", "aten.unsafe_split.Tensor"}) t[k] = split;
  for (const char* k : {"aten.split_with_sizes.default", "aten.unsafe_split_with_sizes.default"}) t[k] = split_with_sizes;
  t["aten.chunk.default"] = chunk;
  t["aten.slice.Tensor"] = slice;
  t["aten.narrow.default"] = narrow;
  for (const char* k : {"aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default"}) t[k] = upsample_nearest;
  for (const char* k : {"aten._upsample_nearest_exact2d.vec", "aten._upsample_nearest_exact2d.default"}) t[k] = upsample_nearest_exact;
  for (const char* k : {"_operator.getitem", "operator.getitem"}) t[k] = getitem;
}

const MapperTable& aten_mappers() {
  static const MapperTable table = [] {
    MapperTable t;
    add_layer_ops(t);
    add_tensor_ops(t);
    return t;
  }();
  return table;
}

}  // namespace snn::conversion::pt2

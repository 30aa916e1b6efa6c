// Ops that only move channels: cat, chunk/split, channel slicing, and the channel shuffle written as
// view [N, g, C/g, H, W] -> transpose(1, 2) -> view [N, C, H, W] (ShuffleNet). They produce lazy
// Channels values (interpreter.hpp) that say which channel of which activation each logical channel is;
// a ChannelGather layer is made only when some other op reads the value as a tensor, so chains of
// these ops cost one copy (or none, when the channels turn out to be one whole activation in order).
#include <numeric>

#include "interpreter.hpp"
#include "snn/layers/channel_gather.hpp"

namespace snn::conversion::detail {

namespace {

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<int64_t>());
}

// A dim argument normalised against a tensor of `rank` dims (batch included), or an error.
int64_t normalise_dim(int64_t d, int64_t rank) {
  const int64_t r = d < 0 ? d + rank : d;
  if (r < 0 || r >= rank)
    throw snn::Error("dim " + std::to_string(d) + " is out of range for a " + std::to_string(rank) + "-D tensor");
  return r;
}

std::string dims_text(const snn::Shape& s) {
  std::string r = "[N";
  for (int64_t d : s) r += ", " + std::to_string(d);
  return r + "]";
}

}  // namespace

Val Interpreter::as_channels(const Node* n, const Val& v) {
  if (v.kind == Val::Kind::Channels) return v;
  if (v.kind != Val::Kind::Act) fail(n, "expected a tensor computed from the input");
  const snn::Shape& s = shape_of(v.act);
  Val r;
  r.kind = Val::Kind::Channels;
  r.dims = {s[0]};
  r.spatial.assign(s.begin() + 1, s.end());
  for (int64_t c = 0; c < s[0]; ++c) r.channels.emplace_back(v.act, c);
  r.view_id = next_view_id_++;
  r.origin = stack_.empty() ? std::string() : stack_.back()->path;
  r.real = v.real;
  return r;
}

Val Interpreter::channel_subset(const Val& x, int64_t begin, int64_t end, int64_t step) {
  Val r = x;
  r.channels.clear();
  for (int64_t c = begin; c < end; c += step) r.channels.push_back(x.channels[size_t(c)]);
  r.dims = {int64_t(r.channels.size())};
  r.view_id = next_view_id_++;
  r.origin = stack_.empty() ? std::string() : stack_.back()->path;
  r.real = at::Tensor();  // set from LibTorch's result of the op
  return r;
}

int Interpreter::materialise(const Node* n, const Val& v) {
  if (v.dims.size() != 1)
    fail(n, "a " + dims_text(logical_shape(v)) + " view of the channels is used as a tensor",
         "snnc supports such views only within a channel shuffle (view, transpose, view back to [N, C, H, W])");
  std::vector<std::pair<int, int64_t>> key;
  for (const auto& [act, c] : v.channels) key.emplace_back(node_of(n, Val::activation(act), "the channel source"), c);
  // The channels of one node, all of them, in order: that node itself.
  const int first = key.front().first;
  bool whole = int64_t(key.size()) == net_.output_shape(first)[0];
  for (size_t i = 0; whole && i < key.size(); ++i) whole = key[i].first == first && key[i].second == int64_t(i);
  if (whole) return first;
  if (auto it = gathers_.find(key); it != gathers_.end()) return acts_[size_t(it->second)].node;

  std::vector<int> inputs;
  std::vector<int64_t> source_input, source_channel;
  for (const auto& [node, c] : key) {
    auto pos = std::find(inputs.begin(), inputs.end(), node);
    if (pos == inputs.end()) pos = inputs.insert(inputs.end(), node);
    source_input.push_back(int64_t(pos - inputs.begin()));
    source_channel.push_back(c);
  }
  // Named after what it does: whole inputs one after another (a concatenation), one contiguous range of
  // one input (a slice), or anything else (a shuffle).
  bool concat = true;
  for (size_t i = 0; concat && i < key.size();) {
    const int node = key[i].first;
    const int64_t c = net_.output_shape(node)[0];
    for (int64_t k = 0; concat && k < c; ++k, ++i) concat = i < key.size() && key[i] == std::make_pair(node, k);
  }
  bool slice = inputs.size() == 1;
  for (size_t i = 1; slice && i < key.size(); ++i) slice = key[i].second == key[i - 1].second + 1;
  // Named where the channels were arranged (the module of the cat or shuffle), not where they are used.
  const std::string op = concat ? "cat" : slice ? "slice" : "shuffle";
  const std::string base = v.origin.empty() ? op : v.origin + "." + op;
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  auto layer = std::make_unique<snn::ChannelGather>(name, int(inputs.size()), std::move(source_input),
                                                    std::move(source_channel));
  const int act = add_layer(n, std::move(layer), inputs);
  gathers_[key] = act;
  const int node = acts_[size_t(act)].node;
  if (reference_mode()) set_reference(node, v.real);
  return node;
}

// aten::cat(Tensor[] tensors, int dim=0): along the channel dim.
Val Interpreter::op_cat(Node* n, const std::vector<Val>& in) {
  if (in[0].kind != Val::Kind::List) fail(n, "cat of a list that is not known when the network is built");
  const auto& items = in[0].items;
  if (items.empty()) fail(n, "cat of an empty list");
  for (const Val& v : items)
    if (!v.is_act())
      fail(n, "cat of a constant tensor with activations", "snnc concatenates tensors computed from the input only");
  const snn::Shape s0 = logical_shape(items[0]);
  const int64_t dim = normalise_dim(in.size() > 1 ? as_int(in[1], "cat dim") : 0, int64_t(s0.size()) + 1);
  if (dim != 1)
    fail(n, "cat along dim " + std::to_string(dim) + " of " + dims_text(s0) + " tensors",
         "snnc concatenates along the channel dim (1) only");
  Val r;
  r.kind = Val::Kind::Channels;
  for (const Val& item : items) {
    const Val c = as_channels(n, item);
    if (c.dims.size() != 1)
      fail(n, "cat of a " + dims_text(logical_shape(c)) + " view", "concatenate [N, C, H, W] tensors");
    if (&item == &items[0]) r.spatial = c.spatial;
    if (c.spatial != r.spatial)
      fail(n, "cat of tensors " + dims_text(logical_shape(items[0])) + " and " + dims_text(logical_shape(c)) +
                  ": the sizes after the channel dim differ");
    r.channels.insert(r.channels.end(), c.channels.begin(), c.channels.end());
  }
  r.dims = {int64_t(r.channels.size())};
  r.view_id = next_view_id_++;
  r.origin = stack_.empty() ? std::string() : stack_.back()->path;
  return r;
}

// chunk(x, chunks, dim), split(x, size or sizes, dim), split_with_sizes(x, sizes, dim): channel ranges.
Val Interpreter::op_split(Node* n, const std::string& k, const std::vector<Val>& in) {
  const Val x = as_channels(n, in[0]);
  const snn::Shape s = logical_shape(x);
  const int64_t dim = normalise_dim(in.size() > 2 ? as_int(in[2], "split dim") : 0, int64_t(s.size()) + 1);
  if (dim != 1 || x.dims.size() != 1)
    fail(n, k.substr(6) + " along dim " + std::to_string(dim) + " of a " + dims_text(s) + " tensor",
         "snnc splits along the channel dim (1) only");
  const int64_t C = x.dims[0];
  std::vector<int64_t> sizes;
  const bool chunk = k.find("chunk") != std::string::npos;
  if (chunk || (in[1].is_const() && in[1].iv.isInt())) {
    const int64_t arg = as_int(in[1], chunk ? "chunks" : "split size");
    if (arg <= 0) fail(n, k.substr(6) + " with " + std::to_string(arg));
    const int64_t size = chunk ? (C + arg - 1) / arg : arg;  // PyTorch: chunk = split into ceil(C/chunks)
    for (int64_t b = 0; b < C; b += size) sizes.push_back(std::min(size, C - b));
    if (sizes.empty()) sizes.push_back(0);
  } else {
    sizes = as_ints(in[1], "split sizes");
    if (std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != C)
      fail(n, "split sizes do not add up to the " + std::to_string(C) + " channels");
  }
  Val r;
  r.kind = Val::Kind::List;
  r.type = n->output()->type();
  int64_t b = 0;
  for (int64_t size : sizes) {
    if (size <= 0) fail(n, k.substr(6) + " into an empty piece of channels");
    r.items.push_back(channel_subset(x, b, b + size, 1));
    b += size;
  }
  return r;
}

// slice(x, dim, start, end, step) / narrow(x, dim, start, length): whole batch (traced x[:, ...]) is an
// identity; a channel range is a Channels value.
Val Interpreter::op_slice(Node* n, const std::string& k, const std::vector<Val>& in) {
  const snn::Shape s = logical_shape(in[0]);
  const int64_t rank = int64_t(s.size()) + 1;
  const int64_t dim = normalise_dim(in.size() > 1 ? as_int(in[1], "slice dim") : 0, rank);
  const int64_t size = dim == 0 ? std::numeric_limits<int64_t>::max() : s[size_t(dim - 1)];
  int64_t start = 0, end = size, step = 1;
  if (k == "aten::narrow") {
    start = as_int(in[2], "narrow start");
    end = start + as_int(in[3], "narrow length");
  } else {
    if (in.size() > 2 && !in[2].is_none()) start = as_int(in[2], "slice start");
    if (in.size() > 3 && !in[3].is_none()) end = as_int(in[3], "slice end");
    if (in.size() > 4) step = as_int(in[4], "slice step");
  }
  if (dim == 0) {
    if (start == 0 && end >= (int64_t(1) << 62) && step == 1) return in[0];
    fail(n, "slicing the batch dimension", "snnc builds the network per image");
  }
  if (dim != 1)
    fail(n, "slicing dim " + std::to_string(dim) + " (height or width) of a " + dims_text(s) + " tensor",
         "snnc slices channels (dim 1) only");
  if (step <= 0) fail(n, "slice step must be positive");
  // Python slice semantics: negative indices count from the end; out-of-range ones are clamped.
  auto clamp = [&](int64_t i) { return std::min(std::max(i < 0 ? i + size : i, int64_t(0)), size); };
  start = clamp(start);
  end = clamp(end);
  if (start == 0 && end == size && step == 1) return in[0];
  if (end <= start) fail(n, "slice selects no channels");
  const Val x = as_channels(n, in[0]);
  if (x.dims.size() != 1) fail(n, "slicing a " + dims_text(s) + " view");
  return channel_subset(x, start, end, step);
}

// transpose(x, d0, d1) / permute(x, dims) of channel dims only (the middle of a channel shuffle).
Val Interpreter::op_transpose(Node* n, const std::string& k, const std::vector<Val>& in) {
  const snn::Shape s = logical_shape(in[0]);
  const int64_t rank = int64_t(s.size()) + 1;
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  if (k == "aten::transpose") {
    const int64_t a = normalise_dim(as_int(in[1], "transpose dim"), rank);
    const int64_t b = normalise_dim(as_int(in[2], "transpose dim"), rank);
    std::swap(perm[size_t(a)], perm[size_t(b)]);
  } else {
    perm = as_ints(in[1], "permute dims");
    if (int64_t(perm.size()) != rank) fail(n, "permute with " + std::to_string(perm.size()) + " dims of a " + std::to_string(rank) + "-D tensor");
    for (auto& p : perm) p = normalise_dim(p, rank);
  }
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i) identity = identity && perm[size_t(i)] == i;
  if (identity) return in[0];
  const Val x = as_channels(n, in[0]);
  const int64_t nd = int64_t(x.dims.size());
  for (int64_t i = 0; i < rank; ++i)
    if ((i == 0 || i > nd) && perm[size_t(i)] != i)
      fail(n, k.substr(6) + " moving dims of a " + dims_text(s) + " tensor other than its channel groups",
           "snnc supports transposes that only reorder channels (as in a channel shuffle)");
  // New channel dims d'_i = dims[perm[i+1]-1]; new logical channel (row-major over d') reads the old
  // channel at the permuted multi-index.
  std::vector<int64_t> new_dims, old_stride(size_t(nd), 1);
  for (int64_t i = nd - 2; i >= 0; --i) old_stride[size_t(i)] = old_stride[size_t(i + 1)] * x.dims[size_t(i + 1)];
  for (int64_t i = 0; i < nd; ++i) new_dims.push_back(x.dims[size_t(perm[size_t(i + 1)] - 1)]);
  Val r = x;
  r.dims = new_dims;
  r.channels.clear();
  const int64_t C = product(new_dims);
  for (int64_t flat = 0; flat < C; ++flat) {
    int64_t rem = flat, old = 0;
    for (int64_t i = nd - 1; i >= 0; --i) {
      const int64_t idx = rem % new_dims[size_t(i)];
      rem /= new_dims[size_t(i)];
      old += idx * old_stride[size_t(perm[size_t(i + 1)] - 1)];
    }
    r.channels.push_back(x.channels[size_t(old)]);
  }
  r.view_id = next_view_id_++;
  r.origin = stack_.empty() ? std::string() : stack_.back()->path;
  r.real = at::Tensor();
  return r;
}

c10::optional<Val> Interpreter::channel_view(Node* n, const Val& x, const std::vector<int64_t>& shape) {
  const snn::Shape s = logical_shape(x);
  const snn::Shape spatial = x.kind == Val::Kind::Channels ? x.spatial : snn::Shape(s.begin() + 1, s.end());
  const int64_t C = numel_of(s) / std::max<int64_t>(1, numel_of(spatial));
  if (shape.size() <= spatial.size()) return c10::nullopt;
  const size_t lead = shape.size() - spatial.size();
  for (size_t i = 0; i < spatial.size(); ++i)
    if (shape[lead + i] != spatial[i]) return c10::nullopt;
  std::vector<int64_t> dims(shape.begin(), shape.begin() + std::ptrdiff_t(lead));
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && infer < 0) infer = int64_t(i);
    else if (dims[i] <= 0) return c10::nullopt;
    else known *= dims[i];
  }
  if (infer >= 0) {
    if (known == 0 || C % known) return c10::nullopt;
    dims[size_t(infer)] = C / known;
  }
  if (product(dims) != C) return c10::nullopt;
  if (x.kind == Val::Kind::Act && dims.size() == 1) return x;  // the shape it already has
  Val r = as_channels(n, x);
  r.dims = dims;
  r.view_id = next_view_id_++;
  r.origin = stack_.empty() ? std::string() : stack_.back()->path;
  r.real = at::Tensor();
  return r;
}

}  // namespace snn::conversion::detail

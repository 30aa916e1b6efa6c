// Lowering of the ops that only reshape or move channels (lowering.hpp). Channel moves (cat, split,
// slice, a channel shuffle's view-transpose-view) stay lazy lists of (node, channel) until a layer reads
// them: then one ChannelGather is made, or none when the list is a whole node in order.
#include <algorithm>
#include <numeric>

#include "lowering.hpp"
#include "snn/error.hpp"
#include "snn/layers/all.hpp"

namespace snn::conversion::detail {

namespace {

std::string ints(const std::vector<int64_t>& v) { return snn::to_string(snn::Shape(v.begin(), v.end())); }

}  // namespace

int Lowering::materialise(const OpNode& n, int value) {
  if (auto it = materialised_.find(value); it != materialised_.end()) return it->second;
  const Val v = vals_[size_t(value)];
  int node = -1;
  if (v.kind == Val::Kind::Pending) {
    node = function_output(n, value, v);
  } else if (v.kind == Val::Kind::Channels) {
    if (v.dims.size() != 1)
      fail(n, "a " + snn::to_string(shape(v)) + " view of the channels is used as a tensor",
           "snnc supports such views only within a channel shuffle (view, transpose, view back to [N, C, H, W])");
    const int first = v.channels.front().first;
    bool whole = int64_t(v.channels.size()) == net_.output_shape(first)[0];
    for (size_t i = 0; whole && i < v.channels.size(); ++i)
      whole = v.channels[i].first == first && v.channels[i].second == int64_t(i);
    if (whole) {
      node = first;
    } else if (auto it = gathers_.find(v.channels); it != gathers_.end()) {
      node = it->second;
    } else {
      std::vector<int> inputs;
      std::vector<int64_t> source_input, source_channel;
      for (const auto& [src, c] : v.channels) {
        auto pos = std::find(inputs.begin(), inputs.end(), src);
        if (pos == inputs.end()) pos = inputs.insert(inputs.end(), src);
        source_input.push_back(int64_t(pos - inputs.begin()));
        source_channel.push_back(c);
      }
      auto layer = std::make_unique<snn::ChannelGather>(layer_name(n, "gather"), int(inputs.size()),
                                                        std::move(source_input), std::move(source_channel));
      node = add_layer(n, std::move(layer), inputs, value);
      gathers_[v.channels] = node;
    }
  } else {
    fail(n, "'" + g_.values[size_t(value)].name + "' is not computed from the input");
  }
  materialised_[value] = node;
  return node;
}

// Any activation as a lazy channel list.
Lowering::Val Lowering::as_channels(const OpNode& n, size_t i) {
  if (in(n, i).kind == Val::Kind::Channels) return in(n, i);
  const int node = node_of(n, i, "the channel source");
  const snn::Shape s = net_.output_shape(node);
  if (s.empty()) fail(n, "moving channels of a scalar");
  Val v;
  v.kind = Val::Kind::Channels;
  for (int64_t c = 0; c < s[0]; ++c) v.channels.emplace_back(node, c);
  v.dims = {s[0]};
  v.spatial.assign(s.begin() + 1, s.end());
  return v;
}

Lowering::Val Lowering::flatten_val(const OpNode& n, size_t i) {
  const int node = node_of(n, i, "the flatten input");
  if (net_.output_shape(node).size() == 1) return node_val(node);
  return node_val(add_layer(n, std::make_unique<snn::Flatten>(layer_name(n, "flatten")), {node}, n.outputs[0]));
}

// A per-image shape that keeps H, W and regroups the channels ([g, C/g] and back): a channel view.
Lowering::Val Lowering::regroup(const OpNode& n, const Val& x, const std::vector<int64_t>& per_image) {
  const snn::Shape s = shape(x);
  if (s.size() < 3 || per_image.size() < 3) return Val{};
  const snn::Shape spatial(s.end() - 2, s.end());
  if (!std::equal(spatial.begin(), spatial.end(), per_image.end() - 2)) return Val{};
  std::vector<int64_t> dims(per_image.begin(), per_image.end() - 2);
  const int64_t channels = std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<int64_t>());
  if (channels != snn::numel_of(s) / (spatial[0] * spatial[1])) return Val{};
  Val v = x.kind == Val::Kind::Channels ? x : as_channels(n, 0);
  v.dims = dims;
  return v;
}

void Lowering::flatten(const OpNode& n) {
  const int r = rank(n, 0);
  const int64_t start = dim_arg(n, n.get_int("start_dim", 1), r), end = dim_arg(n, n.get_int("end_dim", -1), r);
  if (start == end) return set(n, 0, in(n, 0));
  if (start == 1 && end == r - 1) return set(n, 0, flatten_val(n, 0));
  const snn::Shape s = input_shape(n, 0);
  if (start >= 1 && end > start) {
    std::vector<int64_t> shape(s.begin(), s.begin() + (start - 1));
    shape.push_back(std::accumulate(s.begin() + (start - 1), s.begin() + end, int64_t(1), std::multiplies<int64_t>()));
    shape.insert(shape.end(), s.begin() + end, s.end());
    Val v = regroup(n, in(n, 0), shape);
    if (v.kind != Val::Kind::Unset) return set(n, 0, v);
  }
  fail(n, "flatten(start_dim=" + std::to_string(start) + ", end_dim=" + std::to_string(end) + ") of a " +
              std::to_string(r) + "-D tensor",
       "only flattening every dimension but the batch, or merging channel groups, is supported");
}

void Lowering::reshape(const OpNode& n) {
  const snn::Shape s = input_shape(n, 0);
  std::vector<int64_t> target = n.get_ints("shape");
  if (target.empty()) fail(n, "reshape to a scalar");
  if (target[0] != -1 && target[0] != g_.batch)
    fail(n, "reshape to " + ints(target) + " changes the batch dimension (the graph's batch is " +
                std::to_string(g_.batch) + ")", "use x.view(x.size(0), -1) or torch.flatten(x, 1)");
  std::vector<int64_t> rest(target.begin() + 1, target.end());
  const int64_t numel = snn::numel_of(s);
  int64_t known = 1, unknown = 0;
  for (int64_t d : rest) d == -1 ? ++unknown : known *= d;
  if (target[0] == -1 && unknown == 0 && known != numel)
    fail(n, "reshape to " + ints(target) + " moves values across images");
  if (unknown > 1 || (unknown == 1 && (known <= 0 || numel % known)))
    fail(n, "reshape of a " + snn::to_string(s) + " activation to " + ints(target));
  for (int64_t& d : rest)
    if (d == -1) d = numel / known;
  if (rest.size() == 1 && rest[0] == numel) return set(n, 0, flatten_val(n, 0));
  if (snn::Shape(rest.begin(), rest.end()) == s) return set(n, 0, in(n, 0));
  Val v = regroup(n, in(n, 0), rest);
  if (v.kind != Val::Kind::Unset) return set(n, 0, v);
  fail(n, "reshape of a " + snn::to_string(s) + " activation to " + ints(target),
       "supported are flattening to [N, -1] and regrouping channels (a channel shuffle)");
}

// squeeze of a pooled [C, 1, 1] is a flatten; unsqueeze is supported only where it changes nothing a
// later squeeze or reshape does not undo, so it is refused.
void Lowering::squeeze(const OpNode& n, bool un) {
  const snn::Shape s = input_shape(n, 0);
  if (un) fail(n, "unsqueeze of a " + snn::to_string(s) + " activation is not supported");
  const int r = rank(n, 0);
  snn::Shape kept;
  std::vector<int64_t> dims;
  for (int64_t d : n.get_ints("dims")) dims.push_back(dim_arg(n, d, r));
  if (std::count(dims.begin(), dims.end(), 0)) fail(n, "squeeze of the batch dimension");
  for (int d = 1; d < r; ++d) {
    const bool listed = dims.empty() || std::count(dims.begin(), dims.end(), d);
    if (!(listed && s[size_t(d - 1)] == 1)) kept.push_back(s[size_t(d - 1)]);
  }
  if (kept == s) return set(n, 0, in(n, 0));
  if (kept.size() == 1) return set(n, 0, flatten_val(n, 0));
  fail(n, "squeeze of a " + snn::to_string(s) + " activation to " + snn::to_string(kept),
       "only squeezing to a vector per image (after global pooling) is supported");
}

// A permutation of the channel-group dims of a channel view (the shuffle's transpose(1, 2)).
void Lowering::permute(const OpNode& n) {
  const std::vector<int64_t> perm = n.get_ints("perm");
  const int r = rank(n, 0);
  std::vector<int64_t> p;
  for (int64_t d : perm) p.push_back(dim_arg(n, d, r));
  std::vector<int64_t> id(static_cast<size_t>(r));
  std::iota(id.begin(), id.end(), 0);
  if (p == id) return set(n, 0, in(n, 0));
  Val x = as_channels(n, 0);
  const int groups = int(x.dims.size());
  bool ok = int(p.size()) == r && p[0] == 0 && p[size_t(r - 2)] == r - 2 && p[size_t(r - 1)] == r - 1 && groups >= 2;
  if (!ok) fail(n, "permutation " + ints(perm) + " of a " + std::to_string(r) + "-D tensor",
                "only permuting channel groups (a channel shuffle) is supported");
  // Output channel index (over the permuted group dims) -> input channel index.
  std::vector<int64_t> out_dims;
  for (int i = 1; i <= groups; ++i) out_dims.push_back(x.dims[size_t(p[size_t(i)] - 1)]);
  const int64_t total = int64_t(x.channels.size());
  std::vector<std::pair<int, int64_t>> moved(static_cast<size_t>(total));
  std::vector<int64_t> idx(static_cast<size_t>(groups), 0), in_idx(static_cast<size_t>(groups));
  for (int64_t o = 0; o < total; ++o) {
    for (int i = 0; i < groups; ++i) in_idx[size_t(p[size_t(i + 1)] - 1)] = idx[size_t(i)];
    int64_t src = 0;
    for (int i = 0; i < groups; ++i) src = src * x.dims[size_t(i)] + in_idx[size_t(i)];
    moved[size_t(o)] = x.channels[size_t(src)];
    for (int i = groups - 1; i >= 0 && ++idx[size_t(i)] == out_dims[size_t(i)]; --i) idx[size_t(i)] = 0;
  }
  x.channels = std::move(moved);
  x.dims = out_dims;
  set(n, 0, x);
}

void Lowering::cat(const OpNode& n) {
  // The rank from an operand computed from the input: a constant has no shape here (and is refused below).
  size_t ref = 0;
  while (ref + 1 < n.inputs.size() && is_const(n, ref)) ++ref;
  const int r = rank(n, ref);
  const int64_t d = dim_arg(n, n.get_int("dim", 1), r);
  if (d != 1) fail(n, "concatenation along dim " + std::to_string(d), "only channel concatenation (dim 1) is supported");
  Val out;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Val part = as_channels(n, i);
    if (part.dims.size() != 1) fail(n, "concatenating a channel view");
    if (i > 0 && part.spatial != out.spatial)
      fail(n, "concatenating " + snn::to_string(shape(part)) + " with " + snn::to_string(shape(out)));
    if (i == 0) out = part;
    else out.channels.insert(out.channels.end(), part.channels.begin(), part.channels.end());
  }
  out.dims = {int64_t(out.channels.size())};
  set(n, 0, out);
}

void Lowering::split(const OpNode& n) {
  const int r = rank(n, 0);
  const int64_t d = dim_arg(n, n.get_int("dim", 1), r);
  if (d != 1) fail(n, "split along dim " + std::to_string(d), "only splitting channels (dim 1) is supported");
  const Val x = as_channels(n, 0);
  const std::vector<int64_t> sizes = n.get_ints("sizes");
  int64_t begin = 0;
  for (size_t o = 0; o < sizes.size() && o < n.outputs.size(); ++o) {
    if (sizes[o] < 0 || begin + sizes[o] > int64_t(x.channels.size())) fail(n, "split sizes " + ints(sizes) + " exceed the channels");
    Val part = x;
    part.channels.assign(x.channels.begin() + begin, x.channels.begin() + begin + sizes[o]);
    part.dims = {sizes[o]};
    begin += sizes[o];
    if (n.outputs[o] >= 0) set(n, o, part);
  }
}

void Lowering::slice(const OpNode& n) {
  const snn::Shape s = input_shape(n, 0);
  const int r = rank(n, 0);
  const int64_t d = dim_arg(n, n.get_int("dim", 1), r);
  const int64_t size = d == 0 ? g_.batch : s[size_t(d - 1)];
  int64_t start = n.get_int("start", 0), end = n.get_int("end", size), step = n.get_int("step", 1);
  if (step <= 0) fail(n, "slice with step " + std::to_string(step));
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  if (start == 0 && end == size && step == 1) return set(n, 0, in(n, 0));
  if (d != 1) fail(n, "slicing dim " + std::to_string(d), "only slicing channels (dim 1) is supported");
  Val x = as_channels(n, 0);
  std::vector<std::pair<int, int64_t>> kept;
  for (int64_t c = start; c < end; c += step) kept.push_back(x.channels[size_t(c)]);
  if (kept.empty()) fail(n, "a slice with no channels");
  x.channels = std::move(kept);
  x.dims = {int64_t(x.channels.size())};
  set(n, 0, x);
}

}  // namespace snn::conversion::detail

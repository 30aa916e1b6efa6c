// read_exported_program / looks_like_exported_program (see pt2_reader.hpp): the archive, the program,
// the weights as constant values, then every node through the ATen mappings.
#include "snn/conversion/import/pt2_reader.hpp"

#include <algorithm>

#include "import/pt2/archive.hpp"
#include "import/pt2/aten_ops.hpp"
#include "import/pt2/common.hpp"
#include "import/pt2/graph_builder.hpp"
#include "import/pt2/program.hpp"
#include "import/pt2/weights.hpp"

namespace snn::conversion {

namespace pt2 {
namespace {

std::string describe(const Node& n) {
  std::string s = "node '" + n.name + "' (" + n.target;
  if (!n.scope.empty()) s += ", module '" + n.scope + "'" + (n.scope_class.empty() ? "" : " (" + n.scope_class + ")");
  return s + ")";
}

// The constant behind a parameter, buffer or lifted tensor constant placeholder.
OpConstant load_input(const InputSpec& s, Weights& w) {
  if (s.kind == "parameter") return w.load(s.target, false, "parameter '" + s.target + "'");
  // Persistent buffers are in the state dict; non-persistent ones and lifted constants in the constants.
  const bool constants = s.kind == "tensor_constant" || !s.persistent;
  const std::string what = (s.kind == "buffer" ? "buffer '" : "tensor constant '") + s.target + "'";
  return w.load(s.target, w.has(s.target, constants) ? constants : !constants, what);
}

void check_shape(const GraphBuilder& b, const std::string& name, const OpConstant& c, const std::string& what) {
  auto it = b.program.tensors.find(name);
  if (it != b.program.tensors.end() && it->second.shape_known && it->second.shape != c.shape)
    fail(what + " is stored with shape " + snn::to_string(c.shape) + " but the graph declares " + snn::to_string(it->second.shape));
}

void add_user_input(GraphBuilder& b, const InputSpec& s) {
  if (s.kind != "user_input") fail("the program takes a non-tensor input, which snnc does not read");
  if (b.graph.input >= 0)
    fail("the program takes more than one tensor input ('" + b.at(b.graph.input).name + "', '" + s.name +
         "'); snnc converts single-input image models");
  b.graph.input = b.add_tensor(s.name);
  const snn::Shape& shape = b.shape(b.graph.input);
  if (!shape.empty()) b.graph.batch = shape[0];
}

void add_inputs(GraphBuilder& b, Weights& w) {
  for (const InputSpec& s : b.program.inputs) {
    if (s.kind == "user_input" || s.kind == "user_input (not a tensor)") {
      add_user_input(b, s);
    } else if (s.kind == "parameter" || s.kind == "buffer" || s.kind == "tensor_constant") {
      OpConstant c = load_input(s, w);
      check_shape(b, s.name, c, s.kind + " '" + s.target + "'");
      b.add_constant(s.name, std::move(c));
    } else if (s.kind == "constant_input") {
      if (s.constant.kind == Arg::Kind::Int || s.constant.kind == Arg::Kind::Bool) b.add_constant(s.name, OpConstant::scalar(double(s.constant.i)));
      if (s.constant.kind == Arg::Kind::Float) b.add_constant(s.name, OpConstant::scalar(s.constant.f));
    } else {
      fail("the program has a " + s.kind + " input ('" + s.name + "'), which snnc does not read");
    }
  }
  if (b.graph.input < 0) fail("the program takes no tensor input");
}

void set_output(GraphBuilder& b) {
  std::vector<std::string> outs;
  for (const OutputSpec& s : b.program.outputs) {
    if (s.kind == "buffer_mutation" || s.kind == "parameter_mutation" || s.kind == "user_input_mutation")
      fail("the program updates '" + s.target + "' (" + s.kind + "): exported in training mode? call model.eval() "
           "before torch.export.export");
    if (s.kind == "user_output" && !s.name.empty()) outs.push_back(s.name);
  }
  if (outs.empty()) fail("the program returns no tensor");
  b.graph.output = b.value(outs[0]);
  if (outs.size() > 1)
    b.graph.notes.push_back("the program returns " + std::to_string(outs.size()) + " tensors; converted the first, '" + outs[0] + "'");
}

bool is_in_place(const std::string& target) {
  const size_t dot = target.rfind('.');
  return dot != std::string::npos && dot > 0 && target[dot - 1] == '_' && target.compare(0, 5, "aten.") == 0;
}

void map_node(GraphBuilder& b, const Node& n) {
  if (std::all_of(n.outputs.begin(), n.outputs.end(), [](const std::string& o) { return o.empty(); })) {
    b.skipped.insert(n.target);  // asserts, symbolic sizes: nothing a tensor depends on
    return;
  }
  NodeContext c(b, n);
  const MapperTable& table = aten_mappers();
  auto it = table.find(n.target);
  if (it == table.end()) c.unmapped();
  else it->second(c);
  b.outputs_of[n.name] = n.outputs;
  // An in-place op (relu_, add_) changes its first argument: later uses of that name see the result.
  if (is_in_place(n.target) && !n.args.empty() && n.args[0].second.kind == Arg::Kind::Tensor && b.has_value(n.outputs[0]))
    b.bind(n.args[0].second.tensor, b.value(n.outputs[0]));
}

std::string producer(const Program& p) {
  std::string s = p.torch_version.empty() ? "pytorch (version not recorded)" : "pytorch " + p.torch_version;
  s += ", torch.export schema " + std::to_string(p.schema_major) + "." + std::to_string(p.schema_minor);
  if (!p.dialect.empty()) s += ", " + p.dialect + " IR";
  return s;
}

OpGraph read(const std::string& path) {
  Pt2Archive archive(path);
  const std::string program_entry = "models/" + archive.model() + ".json";
  const Program program = parse_program(archive.read_json(program_entry), archive.root() + program_entry);
  Weights weights(archive);
  OpGraph graph;
  graph.format = "torch.export (.pt2)";
  graph.producer = producer(program);
  GraphBuilder b(program, graph);
  add_inputs(b, weights);
  for (const Node& n : program.nodes) {
    try {
      map_node(b, n);
    } catch (const Failure& e) {
      fail(describe(n) + ": " + e.what());
    }
  }
  set_output(b);
  for (const std::string& note : archive.notes) graph.notes.push_back(note);
  for (const std::string& note : weights.notes()) graph.notes.push_back(note);
  if (program.schema_minor > 20)
    graph.notes.push_back("schema " + std::to_string(program.schema_major) + "." + std::to_string(program.schema_minor) +
                          " is newer than the 8.20 snnc was written against; fields added since were ignored");
  if (program.dynamic)
    graph.notes.push_back("exported with dynamic sizes: read at the sizes it was exported with (batch " +
                          std::to_string(graph.batch) + ")");
  for (const std::string& t : b.skipped) graph.notes.push_back("ignored '" + t + "' nodes (no tensor result)");
  return graph;
}

}  // namespace
}  // namespace pt2

OpGraph read_exported_program(const std::string& path) {
  try {
    return pt2::read(path);
  } catch (const pt2::Failure& e) {
    throw snn::Error(path + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {  // a guard missed: still a clear error, never nlohmann's own
    throw snn::Error(path + ": malformed torch.export program (" + e.what() + ")");
  }
}

bool looks_like_exported_program(const std::string& path) {
  try {
    ZipArchive zip(path, pt2::pt2_zip_options());
    return pt2::holds_exported_program(zip);
  } catch (const snn::Error&) {
    return false;
  }
}

}  // namespace snn::conversion

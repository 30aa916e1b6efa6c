// The symbolic run of a TorchScript module: values, control flow, calls, names and error locations.
// Tensor ops on activations are in ops.cpp.
#include "interpreter.hpp"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "snn/layers/all.hpp"

namespace snn::conversion::detail {

namespace {

std::string short_class_name(const c10::ClassTypePtr& t) {
  const auto& q = t->name();
  return q ? q->name() : std::string("?");
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string first_line(const std::string& s) { return trim(s.substr(0, s.find('\n'))); }

bool is_module_object(const c10::IValue& v) { return v.isObject() && v.toObjectRef().type()->is_module(); }

// A place in the Python source the model was compiled from (kept in the archive's debug info).
struct Location {
  std::string file;
  size_t line = 0;
  std::string code;
};

c10::optional<Location> location_of(const torch::jit::SourceRange& range) {
  // A loaded archive's graphs point into its serialized code (code/__torch__.py); its debug info maps
  // that back to the Python source the model was written in, which is what the user knows.
  const auto original = range.findSourceRangeThatGenerated();
  const torch::jit::SourceRange& r = original ? *original : range;
  const auto flc = r.file_line_col();
  if (!flc) return c10::nullopt;
  Location loc{std::get<0>(*flc), std::get<1>(*flc), ""};
  if (loc.file.empty()) return c10::nullopt;
  try {
    const auto& src = r.source();
    loc.code = trim(src->get_line(src->lineno_for_offset(r.start())).str());
    if (loc.code.size() > 100) loc.code = loc.code.substr(0, 97) + "...";
  } catch (...) {
  }
  return loc;
}

// Code inside PyTorch itself or generated helpers: the user's own call site says more.
bool is_library_code(const Location& l) {
  return l.file.find("/torch/") != std::string::npos || l.file.front() == '<';
}

// Recurrent, attention and embedding modules cannot become spiking CNN layers; named up front so the
// error names the module rather than some reshape the surrounding code does for it.
bool unsupported_module_class(const std::string& qualified, const std::string& name) {
  static const std::set<std::string> kinds = {
      "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention", "Transformer",
      "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
      "Embedding", "EmbeddingBag"};
  return qualified.rfind("__torch__.torch.nn.modules.", 0) == 0 && kinds.count(name) > 0;
}

// A bound on the whole symbolic run. prim::Loop trip counts are constants, so a model can ask for any
// amount of work (two nested `for i in range(100000)` loops run 10^10 bodies) and the importer would
// never return. The budget counts executed nodes, a node reading an activation as kActivationOpCost:
// those add or fold layers and, during the faithfulness check, run LibTorch on the check images (tens of
// µs each, against ~1 µs for a node on constants). Torchvision's scripted classifiers execute at most
// ~11300 nodes (DenseNet-201; GoogLeNet ~3000, Inception v3 ~4700, ResNet-152 ~7500), of which a few
// thousand read activations: well under 1/20 of the budget. Spending it takes ~2-3 s (measured on the
// nested-loop fixtures tests/fixtures/nested_loops*.pt, with and without the check).
constexpr int64_t kImportBudget = 2000000;
constexpr int64_t kActivationOpCost = 50;
constexpr int64_t kMaxLoopTrips = 100000;
// Layers are built as the run goes; a loop over a conv could otherwise fill the memory with copies of its
// weights before the budget runs out. DenseNet-201 has 608 layers.
constexpr int kMaxLayers = 20000;

// Per import (one Interpreter::run on one thread): the budget spent so far and the loops being run,
// outermost first, to name them when it is exhausted. Kept here rather than in Interpreter so that the
// class layout, shared with ops.cpp, does not change.
struct RunBudget {
  int64_t spent = 0;
  int64_t nodes = 0;
  std::vector<const Node*> loops;
};
thread_local RunBudget* t_budget = nullptr;

class BudgetScope {
 public:
  BudgetScope() : previous_(t_budget) { t_budget = &budget_; }
  ~BudgetScope() { t_budget = previous_; }
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  RunBudget budget_;
  RunBudget* previous_;
};

class LoopScope {
 public:
  explicit LoopScope(const Node* n) {
    if (t_budget) t_budget->loops.push_back(n);
  }
  ~LoopScope() {
    if (t_budget) t_budget->loops.pop_back();
  }
  LoopScope(const LoopScope&) = delete;
  LoopScope& operator=(const LoopScope&) = delete;
};

// " at file.py:12: `for i in range(100000):`" for the outermost loop in the user's own code, if any.
std::string outermost_loop_location(const std::vector<const Node*>& loops) {
  for (const Node* n : loops) {
    const auto loc = location_of(n->sourceRange());
    if (!loc || is_library_code(*loc)) continue;
    return " at " + loc->file + ":" + std::to_string(loc->line) + (loc->code.empty() ? "" : ": `" + loc->code + "`");
  }
  return "";
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Constant argument readers

int64_t as_int(const Val& v, const char* what) {
  if (v.kind == Val::Kind::Batch)
    throw snn::Error(std::string(what) + " depends on the batch size; snnc builds the network per image");
  if (v.is_const()) {
    if (v.iv.isInt()) return v.iv.toInt();
    if (v.iv.isBool()) return v.iv.toBool() ? 1 : 0;
    if (v.iv.isTensor() && v.iv.toTensor().numel() == 1 && !v.iv.toTensor().is_floating_point())
      return v.iv.toTensor().item<int64_t>();
  }
  throw snn::Error(std::string(what) + " must be a constant integer");
}

double as_double(const Val& v, const char* what) {
  if (v.is_const()) {
    if (v.iv.isDouble()) return v.iv.toDouble();
    if (v.iv.isInt()) return double(v.iv.toInt());
    if (v.iv.isBool()) return v.iv.toBool() ? 1.0 : 0.0;
    if (v.iv.isTensor() && v.iv.toTensor().numel() == 1) return v.iv.toTensor().item<double>();
  }
  throw snn::Error(std::string(what) + " must be a constant number");
}

bool as_bool(const Val& v, const char* what) {
  if (v.is_const()) {
    if (v.iv.isBool()) return v.iv.toBool();
    if (v.iv.isInt()) return v.iv.toInt() != 0;
  }
  throw snn::Error(std::string(what) + " must be a constant bool (it depends on the input)");
}

std::vector<int64_t> as_ints(const Val& v, const char* what) {
  if (v.is_const()) {
    if (v.iv.isIntList()) return v.iv.toIntVector();
    if (v.iv.isInt()) return {v.iv.toInt()};
    if (v.iv.isList()) {
      std::vector<int64_t> r;
      for (const auto& e : v.iv.toListRef()) {
        if (!e.isInt()) throw snn::Error(std::string(what) + " must be a list of constant integers");
        r.push_back(e.toInt());
      }
      return r;
    }
  }
  if (v.kind == Val::Kind::List) {
    std::vector<int64_t> r;
    for (const auto& e : v.items) r.push_back(as_int(e, what));
    return r;
  }
  throw snn::Error(std::string(what) + " must be a list of constant integers");
}

std::vector<int64_t> as_pair(const Val& v, const char* what) {
  auto r = as_ints(v, what);
  if (r.size() == 1) r.push_back(r[0]);
  if (r.size() != 2) throw snn::Error(std::string(what) + " must have 1 or 2 values, got " + std::to_string(r.size()));
  return r;
}

at::Tensor as_tensor(const Val& v, const char* what) {
  if (v.is_const() && v.iv.isTensor()) return v.iv.toTensor();
  if (v.is_act())
    throw snn::Error(std::string(what) + " is computed from the input; snnc needs it to be a parameter or buffer");
  throw snn::Error(std::string(what) + " must be a constant tensor (a parameter or buffer)");
}

snn::Tensor to_snn_tensor(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU).to(at::kFloat).contiguous();
  snn::Shape shape(c.sizes().begin(), c.sizes().end());
  const float* p = c.data_ptr<float>();
  return snn::Tensor(shape, std::vector<float>(p, p + c.numel()));
}

std::vector<float> to_floats(const at::Tensor& t) { return to_snn_tensor(t.reshape({-1})).values(); }

// ------------------------------------------------------------------------------------------------
// The run

Interpreter::Interpreter(std::string file, ImportOptions options, ImportReport* report)
    : file_(std::move(file)), opts_(std::move(options)), report_(report) {}

void Interpreter::check_module_tree(torch::jit::Module& module) {
  for (const auto& m : module.named_modules()) {
    const auto type = m.value.type();
    const std::string qualified = type->name() ? type->name()->qualifiedName() : "";
    const std::string name = short_class_name(type);
    if (unsupported_module_class(qualified, name))
      throw ImportError(file_ + ": module '" + (m.name.empty() ? std::string("<top>") : m.name) + "' is a torch.nn." +
                        name + ", which cannot be converted: snnc converts feed-forward CNNs (conv, linear, "
                        "pooling, ReLU-like activations); recurrent, attention and embedding layers are not supported");
  }
}

snn::Network Interpreter::run(torch::jit::Module& module) {
  BudgetScope budget;
  check_module_tree(module);
  try {
    net_ = snn::Network(opts_.input_shape);
  } catch (const snn::Error& e) {
    throw ImportError(file_ + ": " + e.what());
  }
  acts_.push_back({snn::Network::kInput, 0});
  replaced_.push_back(-1);
  paths_[module._ivalue().get()] = "";

  auto method = module.find_method("forward");
  if (!method) throw ImportError(file_ + ": the module has no forward method");
  std::shared_ptr<Graph> graph = method->graph();
  if (graph->inputs().size() != 2)
    throw ImportError(file_ + ": forward takes " + std::to_string(graph->inputs().size() - 1) +
                      " arguments; snnc converts models with one image tensor input");

  Frame root;
  root.class_name = short_class_name(module.type());
  root.function = root.class_name + ".forward";
  root.leaf = module.children().size() == 0;
  Val image = Val::activation(0);
  if (!opts_.reference_inputs.empty()) {
    const snn::Tensor& x = opts_.reference_inputs;
    snn::Shape expect = {x.rank() ? x.dim(0) : 0};
    expect.insert(expect.end(), opts_.input_shape.begin(), opts_.input_shape.end());
    if (x.shape() != expect || x.dim(0) == 0)
      throw ImportError(file_ + ": reference inputs " + snn::to_string(x.shape()) + " do not fit the input shape " +
                        snn::to_string(opts_.input_shape));
    reference_inputs_ = torch::from_blob(const_cast<float*>(x.data()), x.shape(), torch::kFloat).clone();
    image.real = reference_inputs_;
  }
  std::vector<Val> outs = call_graph(*graph, {Val::constant(module._ivalue()), image}, std::move(root));

  Val out = outs.at(0);
  // A single-tensor tuple (some exporters return `(x,)`) is the tensor; so is a tuple whose other items
  // are None (scripted GoogLeNet and Inception return (logits, None, None) in eval mode).
  while (out.kind == Val::Kind::Tuple) {
    std::vector<Val> tensors;
    bool only_none_besides = true;
    for (const Val& v : out.items) {
      if (v.is_act()) tensors.push_back(v);
      else if (!v.is_none()) only_none_besides = false;
    }
    if (tensors.size() != 1 || !only_none_besides)
      throw ImportError(file_ + ": the model's forward returns a tuple of " + std::to_string(out.items.size()) +
                        " items (" + std::to_string(tensors.size()) + " computed tensors); snnc needs one tensor of "
                        "class scores (other items may be None)");
    out = tensors[0];
  }
  if (!out.is_act())
    throw ImportError(file_ + ": the model's output is not a single tensor computed from the input; snnc needs "
                      "forward to return the class scores");
  if (out.kind == Val::Kind::Channels) {  // e.g. forward ends with a cat
    at::Tensor real = out.real;
    out = Val::activation(new_act(materialise(nullptr, out)));
    out.real = real;
  }
  const int a = resolve(out.act);
  const int node = acts_[size_t(a)].node;
  if (node == snn::Network::kInput) throw ImportError(file_ + ": the model has no layers (it returns its input)");
  if (node >= 0 && acts_[size_t(a)].gen != gen_[size_t(node)])
    throw ImportError(file_ + ": the model returns the output of '" + net_.layer(node).name() +
                      "' from before a batch norm was folded into it");
  if (node != net_.output_node())
    throw ImportError(file_ + ": the model returns the output of '" + net_.layer(node).name() +
                      "', but layers after it ('" + net_.layer(net_.output_node()).name() +
                      "') were computed too; snnc needs the output to be the last layer computed");
  try {
    net_.validate();
  } catch (const snn::Error& e) {
    throw ImportError(file_ + ": " + e.what());
  }
  if (report_) {
    report_->ops.assign(ops_.begin(), ops_.end());
    if (reference_mode()) {
      references_.resize(size_t(net_.size()));
      report_->references = std::move(references_);
      report_->reference_output = to_snn_tensor(out.real);
    }
  }
  return std::move(net_);
}

std::vector<Val> Interpreter::call_graph(Graph& graph, std::vector<Val> args, Frame frame) {
  if (args.size() != graph.inputs().size())
    fail(frame.call_site, frame.function + " called with " + std::to_string(args.size()) + " arguments, expects " +
                              std::to_string(graph.inputs().size()));
  for (size_t i = 0; i < args.size(); ++i) frame.env[graph.inputs()[i]] = std::move(args[i]);
  stack_.push_back(&frame);
  std::vector<Val> outs = run_block(graph.block(), frame, {});
  stack_.pop_back();
  return outs;
}

std::vector<Val> Interpreter::run_block(Block* block, Frame& f, const std::vector<Val>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) f.env[block->inputs()[i]] = inputs[i];
  for (Node* n : block->nodes()) run_node(n, f);
  std::vector<Val> outs;
  for (const Value* v : block->outputs()) outs.push_back(get(f, v));
  return outs;
}

Val Interpreter::get(Frame& f, const Value* v) const {
  auto it = f.env.find(v);
  if (it == f.env.end()) throw snn::Error("internal: TorchScript value %" + v->debugName() + " used before it is set");
  if (it->second.kind == Val::Kind::Channels) {  // an in-place op turned this view into a layer's output
    auto r = replaced_views_.find(it->second.view_id);
    if (r != replaced_views_.end()) {
      Val a = Val::activation(r->second);
      a.real = it->second.real;
      return a;
    }
  }
  return it->second;
}

void Interpreter::set_outputs(Node* n, Frame& f, std::vector<Val> outs) {
  if (outs.size() != n->outputs().size())
    fail(n, std::string(n->kind().toQualString()) + " produced " + std::to_string(outs.size()) + " values, expected " +
                std::to_string(n->outputs().size()));
  for (size_t i = 0; i < outs.size(); ++i) f.env[n->outputs()[i]] = std::move(outs[i]);
}

void Interpreter::run_node(Node* n, Frame& f) {
  std::vector<Val> in;
  in.reserve(n->inputs().size());
  for (const Value* v : n->inputs()) in.push_back(get(f, v));
  if (t_budget) {
    const bool on_activations = std::any_of(in.begin(), in.end(), [](const Val& v) { return v.is_act(); });
    t_budget->nodes += 1;
    t_budget->spent += on_activations ? kActivationOpCost : 1;
    if (t_budget->spent > kImportBudget) {
      // Name the outermost loop being run (its trip count multiplies all the others) besides the node.
      std::string hint = "snnc imports feed-forward CNNs, whose forward executes a few thousand operations";
      if (!t_budget->loops.empty()) {
        const std::string loop = outermost_loop_location(t_budget->loops);
        hint += "; it was inside " + std::to_string(t_budget->loops.size()) + " nested loop(s), the outermost" +
                (loop.empty() ? std::string(" in library code") : loop);
      }
      fail(n, "the model's forward executes more than " + std::to_string(t_budget->nodes - 1) +
                  " operations (nested loops?) and was stopped at " + n->kind().toQualString(), hint);
    }
  }
  if (net_.size() > kMaxLayers)
    fail(n, "the model's forward builds more than " + std::to_string(kMaxLayers) + " layers (a loop over layers?)",
         "snnc imports feed-forward CNNs; DenseNet-201 has 608");
  ops_.insert(n->kind().toQualString());
  try {
    dispatch(n, f, in);
  } catch (const ImportError&) {
    throw;
  } catch (const snn::Error& e) {
    fail(n, e.what());
  } catch (const c10::Error& e) {
    fail(n, first_line(e.what_without_backtrace()));
  }
}

void Interpreter::dispatch(Node* n, Frame& f, const std::vector<Val>& in) {
  const auto kind = n->kind();
  if (kind == c10::prim::Constant) {
    // Function constants only name the callee of prim::CallFunction, which reads it from the type.
    if (n->output()->type()->kind() == c10::TypeKind::FunctionType) return set_outputs(n, f, {Val()});
    auto v = torch::jit::toIValue(n->output());
    if (!v) fail(n, "cannot read a constant of type " + n->output()->type()->str());
    return set_outputs(n, f, {Val::constant(*v)});
  }
  if (kind == c10::prim::GetAttr) {
    if (!in[0].is_const() || !in[0].iv.isObject()) fail(n, "attribute access on a value that is not a module");
    const auto obj = in[0].iv.toObject();
    const std::string name = n->s(c10::attr::name);
    c10::IValue v = obj->getAttr(name);
    if (is_module_object(v) && !paths_.count(&v.toObjectRef())) {
      const std::string parent = module_path(obj);
      paths_[&v.toObjectRef()] = parent.empty() ? name : parent + "." + name;
    }
    return set_outputs(n, f, {Val::constant(std::move(v))});
  }
  if (kind == c10::prim::SetAttr)
    fail(n, "forward assigns the module attribute '" + n->s(c10::attr::name) +
                "'; snnc converts models whose forward has no side effects");
  if (kind == c10::prim::ListConstruct || kind == c10::prim::TupleConstruct) {
    const bool all_const = std::all_of(in.begin(), in.end(), [](const Val& v) { return v.is_const(); });
    if (all_const && kind == c10::prim::ListConstruct) {
      c10::impl::GenericList list(n->output()->type()->expectRef<c10::ListType>().getElementType());
      for (const Val& v : in) list.push_back(v.iv);
      return set_outputs(n, f, {Val::constant(c10::IValue(std::move(list)))});
    }
    if (all_const) {
      std::vector<c10::IValue> items;
      for (const Val& v : in) items.push_back(v.iv);
      return set_outputs(n, f, {Val::constant(c10::ivalue::Tuple::create(std::move(items)))});
    }
    Val r;
    r.kind = kind == c10::prim::ListConstruct ? Val::Kind::List : Val::Kind::Tuple;
    r.items = in;
    r.type = n->output()->type();
    return set_outputs(n, f, {std::move(r)});
  }
  if (kind == c10::prim::ListUnpack || kind == c10::prim::TupleUnpack) {
    std::vector<Val> items;
    if (in[0].kind == Val::Kind::List || in[0].kind == Val::Kind::Tuple) {
      items = in[0].items;
    } else if (in[0].is_const() && in[0].iv.isList()) {
      for (const auto& e : in[0].iv.toListRef()) items.push_back(Val::constant(e));
    } else if (in[0].is_const() && in[0].iv.isTuple()) {
      for (const auto& e : in[0].iv.toTupleRef().elements()) items.push_back(Val::constant(e));
    } else {
      fail(n, "cannot unpack this value");
    }
    return set_outputs(n, f, std::move(items));
  }
  if (kind == c10::prim::TupleIndex) {
    std::vector<Val> items = in[0].items;
    if (in[0].is_const() && in[0].iv.isTuple())
      for (const auto& e : in[0].iv.toTupleRef().elements()) items.push_back(Val::constant(e));
    int64_t i = as_int(in[1], "tuple index");
    if (i < 0) i += int64_t(items.size());
    if (i < 0 || i >= int64_t(items.size())) fail(n, "tuple index out of range");
    return set_outputs(n, f, {items[size_t(i)]});
  }
  // list.append(tensor) (DenseNet collects its features this way): lists of activations are values
  // here, so the appended list replaces the list in this frame, where the code reads it next.
  if (kind == c10::aten::append && in.size() == 2 && (in[0].kind == Val::Kind::List || !in[1].is_const())) {
    Val r;
    r.kind = Val::Kind::List;
    r.type = n->input(0)->type();
    if (in[0].kind == Val::Kind::List) r.items = in[0].items;
    else if (in[0].is_const() && in[0].iv.isList())
      for (const auto& e : in[0].iv.toListRef()) r.items.push_back(Val::constant(e));
    else fail(n, "append to a value that is not a list");
    r.items.push_back(in[1]);
    f.env[n->input(0)] = r;
    return set_outputs(n, f, {std::move(r)});
  }
  if (kind == c10::prim::If) return run_if(n, f, in);
  if (kind == c10::prim::Loop) return run_loop(n, f, in);
  if (kind == c10::prim::CallMethod) return call_method(n, f, in);
  if (kind == c10::prim::CallFunction) return call_function(n, f, in);
  if (kind == c10::prim::RaiseException) {
    const std::string msg = in.size() > 0 && in[0].is_const() && in[0].iv.isString() ? in[0].iv.toStringRef() : "";
    fail(n, "the model's code raised an exception while being converted" + (msg.empty() ? "" : ": " + msg));
  }
  if (kind == c10::prim::Uninitialized) return set_outputs(n, f, {Val()});
  if (kind == c10::prim::unchecked_cast) return set_outputs(n, f, {in[0]});
  if (kind == c10::aten::warn) return;
  // The batch size stays symbolic through int <-> tensor conversions (traced x.view(x.size(0), -1)).
  if ((kind == c10::prim::NumToTensor || kind == c10::aten::Int) && in.size() == 1 && in[0].kind == Val::Kind::Batch)
    return set_outputs(n, f, {in[0]});
  if (kind == c10::prim::device && in[0].is_act()) return set_outputs(n, f, {Val::constant(c10::Device(c10::kCPU))});
  if (kind == c10::prim::dtype && in[0].is_act())
    return set_outputs(n, f, {Val::constant(int64_t(c10::ScalarType::Float))});

  const bool all_const = std::all_of(in.begin(), in.end(), [](const Val& v) { return v.is_const(); });
  if (all_const && const_eval(n, f, in)) return;
  if (run_tensor_op(n, f, in)) return;

  // Not something snnc can map: say what it is and, where it helps, what would work.
  const std::string k = kind.toQualString();
  static const std::set<std::string> qcfs_like = {"aten::floor", "aten::div", "aten::mul", "aten::sub", "aten::round"};
  // Activations a spiking neuron cannot stand for, with the names users know them by.
  static const std::map<std::string, std::string> activations = {
      {"aten::sigmoid", "Sigmoid"},     {"aten::tanh", "Tanh"},           {"aten::gelu", "GELU"},
      {"aten::silu", "SiLU (Swish)"},   {"aten::silu_", "SiLU (Swish)"},  {"aten::elu", "ELU"},
      {"aten::elu_", "ELU"},            {"aten::leaky_relu", "LeakyReLU"}, {"aten::leaky_relu_", "LeakyReLU"},
      {"aten::softplus", "Softplus"},   {"aten::hardswish", "Hardswish"}, {"aten::hardswish_", "Hardswish"},
      {"aten::hardsigmoid", "Hardsigmoid"}, {"aten::hardsigmoid_", "Hardsigmoid"}, {"aten::mish", "Mish"},
      {"aten::prelu", "PReLU"},         {"aten::selu", "SELU"},           {"aten::softmax", "Softmax"},
      {"aten::log_softmax", "LogSoftmax"}, {"aten::sigmoid_", "Sigmoid"}, {"aten::tanh_", "Tanh"}};
  if (auto a = activations.find(k); a != activations.end())
    fail(n, "the activation " + a->second + " (" + k + ") cannot be converted",
         "an integrate-and-fire neuron's firing rate is a ReLU clipped at its threshold, so only ReLU-like "
         "activations map to spiking neurons exactly (ReLU, ReLU6, hardtanh/clamp with min 0, QCFS); retrain the "
         "CNN with ReLU or QCFS activations in place of " + a->second);
  std::string hint;
  if (qcfs_like.count(k))
    hint = "arithmetic on activations is not supported. If this is a QCFS-style activation: snnc recognises a "
           "submodule whose class name contains 'QCFS' or 'ClipFloor', with a parameter 'thresh' or 'up' and an "
           "int attribute 'L'";
  else if (k == "aten::lstm" || k == "aten::gru" || k == "aten::rnn_tanh" || k == "aten::rnn_relu")
    hint = "recurrent layers cannot be converted";
  else if (k == "aten::upsample_bilinear2d" || k == "aten::upsample_bicubic2d")
    hint = "only nearest-neighbour upsampling is supported";
  else if (std::any_of(in.begin(), in.end(), [](const Val& v) { return v.kind == Val::Kind::Batch; }))
    hint = "it computes with the batch size, which snnc does not know when it builds the network per image";
  fail(n, "unsupported op " + k, hint);
}

bool Interpreter::const_eval(Node* n, Frame& f, const std::vector<Val>& in) {
  if (!n->maybeOperator()) return false;
  torch::jit::Stack stack;
  for (const Val& v : in) stack.push_back(v.iv);
  n->getOperation()(stack);
  std::vector<Val> outs;
  for (auto& v : stack) outs.push_back(Val::constant(std::move(v)));
  set_outputs(n, f, std::move(outs));
  return true;
}

void Interpreter::run_if(Node* n, Frame& f, const std::vector<Val>& in) {
  if (!in[0].is_const() || !in[0].iv.isBool())
    fail(n, "control flow depends on the input (an `if` on a computed value)", "snnc converts static networks");
  Block* b = n->blocks()[in[0].iv.toBool() ? 0 : 1];
  set_outputs(n, f, run_block(b, f, {}));
}

void Interpreter::run_loop(Node* n, Frame& f, const std::vector<Val>& in) {
  const int64_t trips = as_int(in[0], "loop trip count");
  bool cond = as_bool(in[1], "loop condition");
  std::vector<Val> carried(in.begin() + 2, in.end());
  Block* body = n->blocks()[0];
  LoopScope scope(n);
  for (int64_t i = 0; cond && i < trips; ++i) {
    if (i >= kMaxLoopTrips)
      fail(n, "a loop runs more than " + std::to_string(kMaxLoopTrips) + " times",
           "snnc imports feed-forward CNNs, whose loops only walk their layers");
    std::vector<Val> inputs = {Val::constant(i)};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    std::vector<Val> outs = run_block(body, f, inputs);
    cond = as_bool(outs[0], "loop condition");
    carried.assign(outs.begin() + 1, outs.end());
  }
  set_outputs(n, f, std::move(carried));
}

void Interpreter::call_method(Node* n, Frame& f, const std::vector<Val>& in) {
  if (!in[0].is_const() || !in[0].iv.isObject()) fail(n, "method call on a value that is not a module");
  const auto obj = in[0].iv.toObject();
  const auto cls = obj->type();
  const std::string method = n->s(c10::attr::name);
  const std::string cname = short_class_name(cls);
  std::string lower = cname;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  // QCFS by convention: recognised by class name before its body (clamp/floor arithmetic) is seen.
  if (method == "forward" && (lower.find("qcfs") != std::string::npos || lower.find("clipfloor") != std::string::npos)) {
    if (in.size() != 2) fail(n, "QCFS module '" + module_path(obj) + "' called with " + std::to_string(in.size() - 1) + " arguments");
    return qcfs_module(n, f, obj, in[1]);
  }
  torch::jit::Function* fn = cls->findMethod(method);
  if (!fn) fail(n, "module class " + cname + " has no method " + method);
  std::shared_ptr<Graph> graph = torch::jit::toGraphFunction(*fn).graph();
  Frame child;
  child.path = paths_.count(obj.get()) ? module_path(obj) : f.path;
  child.class_name = cname;
  child.function = cname + "." + method;
  child.leaf = true;
  for (size_t i = 0; i < cls->numAttributes(); ++i)
    if (auto t = cls->getAttribute(i)->cast<c10::ClassType>(); t && t->is_module()) child.leaf = false;
  child.call_site = n;
  set_outputs(n, f, call_graph(*graph, in, std::move(child)));
}

void Interpreter::call_function(Node* n, Frame& f, const std::vector<Val>& in) {
  const auto ft = n->input(0)->type()->cast<c10::FunctionType>();
  if (!ft) fail(n, "call of something that is not a TorchScript function");
  torch::jit::Function* fn = ft->function();
  std::shared_ptr<Graph> graph = torch::jit::toGraphFunction(*fn).graph();
  // A free function (F.relu, F.max_pool2d...) runs in its caller's module: layers are named after it.
  Frame child;
  child.path = f.path;
  child.class_name = f.class_name;
  child.function = fn->name();
  child.leaf = f.leaf;
  child.call_site = n;
  set_outputs(n, f, call_graph(*graph, std::vector<Val>(in.begin() + 1, in.end()), std::move(child)));
}

std::string Interpreter::module_path(const c10::intrusive_ptr<c10::ivalue::Object>& obj) const {
  auto it = paths_.find(obj.get());
  return it == paths_.end() ? std::string() : it->second;
}

// ------------------------------------------------------------------------------------------------
// Errors and names

void Interpreter::fail(const Node* n, const std::string& message, const std::string& hint) const {
  throw ImportError(file_ + ": " + message + where(n) + (hint.empty() ? "" : "; " + hint));
}

std::string Interpreter::where(const Node* n) const {
  std::ostringstream os;
  if (!stack_.empty()) {
    const Frame& fr = *stack_.back();
    if (fr.path.empty())
      os << " in the top-level module (" << fr.class_name << ")";
    else
      os << " in module '" << fr.path << "' (" << fr.class_name << ")";
  }
  // The first location in the user's own code: the node itself, else the innermost call site.
  std::vector<c10::optional<Location>> locs;
  if (n) locs.push_back(location_of(n->sourceRange()));
  for (auto it = stack_.rbegin(); it != stack_.rend(); ++it)
    if ((*it)->call_site) locs.push_back(location_of((*it)->call_site->sourceRange()));
  const Location* pick = nullptr;
  for (const auto& l : locs)
    if (l && !is_library_code(*l)) {
      pick = &*l;
      break;
    }
  // Only library code (e.g. an nn.Sequential's loop calling a torch.nn layer): the module path says more.
  if (pick) {
    os << " at " << pick->file << ":" << pick->line;
    if (!pick->code.empty()) os << ": `" << pick->code << "`";
  }
  return os.str();
}

std::string Interpreter::layer_name(const std::string& op) {
  const Frame* fr = stack_.empty() ? nullptr : stack_.back();
  std::string base = op;
  if (fr && !fr->path.empty()) base = fr->leaf ? fr->path : fr->path + "." + op;
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

// ------------------------------------------------------------------------------------------------
// The network being built

int Interpreter::new_act(int node) {
  acts_.push_back({node, node >= 0 ? gen_[size_t(node)] : 0});
  replaced_.push_back(-1);
  return int(acts_.size()) - 1;
}

int Interpreter::resolve(int act) const {
  while (replaced_[size_t(act)] >= 0) act = replaced_[size_t(act)];
  return act;
}

int Interpreter::node_of(const Node* n, const Val& v, const char* what) {
  if (!v.is_act()) fail(n, std::string(what) + " is not a tensor computed from the input");
  if (v.kind == Val::Kind::Channels) return materialise(n, v);
  const Act& a = acts_[size_t(resolve(v.act))];
  if (a.node >= 0 && a.gen != gen_[size_t(a.node)])
    fail(n, "the output of '" + net_.layer(a.node).name() +
                "' is used both before and after the batch norm (or bias) folded into it",
         "snnc can fold a batch norm only when nothing else reads the layer's output");
  return a.node;
}

const snn::Shape& Interpreter::shape_of(int act) const {
  return net_.output_shape(acts_[size_t(resolve(act))].node);
}

snn::Shape Interpreter::logical_shape(const Val& v) const {
  if (v.kind == Val::Kind::Act) return shape_of(v.act);
  snn::Shape s(v.dims.begin(), v.dims.end());
  s.insert(s.end(), v.spatial.begin(), v.spatial.end());
  return s;
}

bool Interpreter::consumed(int node) const {
  for (int j = 0; j < net_.size(); ++j)
    for (int i : net_.inputs(j))
      if (i == node) return true;
  return false;
}

int Interpreter::add_layer(const Node* n, std::unique_ptr<snn::Layer> layer, const std::vector<int>& input_nodes) {
  int node = -1;
  try {
    node = net_.add(std::move(layer), input_nodes);
  } catch (const snn::Error& e) {
    fail(n, e.what(), "is the input shape " + snn::to_string(opts_.input_shape) +
                          " right? It must be the [C, H, W] the model was trained on");
  }
  gen_.push_back(0);
  return new_act(node);
}

}  // namespace snn::conversion::detail

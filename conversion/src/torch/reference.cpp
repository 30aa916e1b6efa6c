// Reference values: while the interpreter builds the network symbolically, it also runs every op that
// touches an activation with LibTorch itself on a few check images. Each network node then has the value
// PyTorch computes for it, which the faithfulness check (faithfulness.hpp) compares with the ANN view
// layer by layer. Running the model's own ops, in the model's own order, is what makes these values
// PyTorch's and not a re-implementation of them.
#include "interpreter.hpp"

namespace snn::conversion::detail {

c10::IValue Interpreter::concrete(const Val& v) const {
  switch (v.kind) {
    case Val::Kind::Const:
      return v.iv;
    case Val::Kind::Act:
    case Val::Kind::Channels:
      if (!v.real.defined()) throw snn::Error("internal: an activation has no reference value");
      return v.real;
    case Val::Kind::Batch:
      return c10::IValue(reference_inputs_.size(0));
    case Val::Kind::Tuple: {
      std::vector<c10::IValue> items;
      for (const Val& i : v.items) items.push_back(concrete(i));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    case Val::Kind::List: {
      c10::TypePtr elem = c10::AnyType::get();
      if (v.type && v.type->cast<c10::ListType>()) elem = v.type->expectRef<c10::ListType>().getElementType();
      else if (!v.items.empty() && v.items[0].kind == Val::Kind::Batch) elem = c10::IntType::get();
      else if (!v.items.empty() && v.items[0].is_act()) elem = c10::TensorType::get();
      c10::impl::GenericList list(elem);
      for (const Val& i : v.items) list.push_back(concrete(i));
      return c10::IValue(std::move(list));
    }
  }
  return {};
}

std::vector<c10::IValue> Interpreter::run_concrete(Node* n, const std::vector<Val>& in) {
  if (!reference_mode() || !n->maybeOperator()) return {};
  torch::jit::Stack stack;
  for (const Val& v : in) stack.push_back(concrete(v));
  try {
    n->getOperation()(stack);
  } catch (const c10::Error& e) {
    const std::string msg = e.what_without_backtrace();
    fail(n, "LibTorch cannot run this op on the check images: " + msg.substr(0, msg.find('\n')));
  }
  return std::vector<c10::IValue>(stack.begin(), stack.end());
}

void Interpreter::attach_real(Val& v, const c10::IValue& real) const {
  if (v.is_act() && real.isTensor()) {
    v.real = real.toTensor();
  } else if ((v.kind == Val::Kind::List || v.kind == Val::Kind::Tuple) && (real.isList() || real.isTuple())) {
    const auto items = real.isList() ? real.toListRef().vec() : real.toTupleRef().elements().vec();
    for (size_t i = 0; i < v.items.size() && i < items.size(); ++i) attach_real(v.items[i], items[i]);
  }
}

void Interpreter::set_reference(int node, const at::Tensor& real) {
  if (node < 0 || !real.defined()) return;
  if (references_.size() < size_t(net_.size())) references_.resize(size_t(net_.size()));
  const snn::Shape& s = net_.output_shape(node);
  if (real.numel() != reference_inputs_.size(0) * snn::numel_of(s)) return;  // not this node's value
  std::vector<int64_t> shape = {reference_inputs_.size(0)};
  shape.insert(shape.end(), s.begin(), s.end());
  // A copy: in-place ops later in the model overwrite the tensor this value lives in.
  references_[size_t(node)] = to_snn_tensor(real.reshape(shape));
}

void Interpreter::record_references(const Val& out, int first_new_node, const std::vector<int>& gens_before) {
  if (!reference_mode() || !out.is_act() || !out.real.defined()) return;
  references_.resize(size_t(net_.size()));
  // Nodes this op created (an op may make two, e.g. mean -> pool + flatten, which hold the same values).
  for (int node = first_new_node; node < net_.size(); ++node)
    if (references_[size_t(node)].empty()) set_reference(node, out.real);
  // A batch norm or bias folded into an earlier node changed what that node computes.
  if (out.kind == Val::Kind::Act) {
    const int node = acts_[size_t(resolve(out.act))].node;
    if (node >= 0 && node < first_new_node && size_t(node) < gens_before.size() &&
        gen_[size_t(node)] != gens_before[size_t(node)])
      set_reference(node, out.real);
  }
}

}  // namespace snn::conversion::detail

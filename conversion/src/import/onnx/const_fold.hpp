// Constant folding for the ONNX reader: ONNX ops evaluated on OpConstants (float or int64), for shape
// arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) and for ops applied to initializers
// (Transpose, Cast, Reshape of a weight). Semantics are ONNX's (numpy broadcasting, integer Div truncates,
// Slice clamps). Errors are snn::Error without the file path (the caller adds it and the node).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion::onnx::fold {

// Largest constant a fold may produce: shape arithmetic is tiny; a transposed weight may be large.
constexpr int64_t kMaxFolded = int64_t(1) << 28;

snn::Shape broadcast_shape(const snn::Shape& a, const snn::Shape& b);  // numpy rules; throws if they clash

// Elementwise ops with broadcasting: Add Sub Mul Div Max Min Equal Less Greater Pow And Or Mod.
// Ints stay ints (comparisons give 0/1 ints); a float operand makes the result float.
bool is_binary(const std::string& op);
OpConstant binary(const std::string& op, const OpConstant& a, const OpConstant& b);
// Neg Floor Ceil Round Abs Relu Sqrt Not Reciprocal Sign Identity.
bool is_unary(const std::string& op);
OpConstant unary(const std::string& op, const OpConstant& a);
OpConstant where(const OpConstant& cond, const OpConstant& x, const OpConstant& y);

OpConstant cast(const OpConstant& a, bool to_int);   // float -> int truncates toward zero, as ONNX does
OpConstant reshape(const OpConstant& a, snn::Shape shape);
OpConstant transpose(const OpConstant& a, const std::vector<int64_t>& perm);
OpConstant concat(const std::vector<const OpConstant*>& parts, int64_t axis);
OpConstant gather(const OpConstant& data, const OpConstant& indices, int64_t axis);
// Per axis: start, end, step already normalised by slice_bounds (step != 0).
OpConstant slice(const OpConstant& a, const std::vector<int64_t>& starts, const std::vector<int64_t>& counts,
                 const std::vector<int64_t>& steps);
OpConstant expand(const OpConstant& a, const snn::Shape& shape);
OpConstant fill(const snn::Shape& shape, const OpConstant& value);  // ConstantOfShape
OpConstant range(const OpConstant& start, const OpConstant& limit, const OpConstant& delta);
OpConstant reduce(const std::string& op, const OpConstant& a, std::vector<int64_t> axes, bool keepdims);

// ONNX Slice's clamping for one axis of size `dim`: start/end adjusted for negatives and clamped; returns
// the element count.
int64_t slice_bounds(int64_t dim, int64_t& start, int64_t end, int64_t step);

int64_t to_int_checked(double v);  // throws when v is not finite or beyond the int64 range
// Element count of a shape, or -1 when a dimension is negative or above 2^40, or the count exceeds 2^40.
int64_t bounded_numel(const snn::Shape& shape);
int64_t normalize_axis(int64_t axis, size_t rank);  // throws unless -rank <= axis < rank
snn::Shape strides_of(const snn::Shape& shape);

}  // namespace snn::conversion::onnx::fold

// ONNX reader: an ONNX model file (ModelProto, protobuf) -> OpGraph (op_graph.hpp).
//
// Native: a small bounded protobuf wire-format decoder of our own (no libprotobuf, no generated code), so
// every length and count in a hostile file is checked before use and the reader fuzzes cleanly. Reads
// opsets 13 to the newest onnx 1.23 writes, from torch.onnx.export (dynamo and TorchScript-based
// exporters) and from onnx's own helpers. Initializers and Constant nodes become constants; shape
// arithmetic on static shapes (Shape, Gather, Unsqueeze, Concat, Cast...) is folded. External data is
// read only from files beside the model: an absolute location, or one that climbs out of the model's
// folder ("..", links), is refused.
#pragma once
#include <string>

#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion {

// Throws snn::Error naming the file (and the node or initializer at fault).
OpGraph read_onnx(const std::string& path);

// True when the file's first bytes parse as an ONNX ModelProto (ir_version / graph fields), without
// reading it all; for recognising the format by content.
bool looks_like_onnx(const std::string& path);

}  // namespace snn::conversion

// Weights: parameters, buffers and lifted tensor constants of a .pt2 archive, decoded from their raw
// little-endian storages as data/weights/<model>_weights_config.json and
// data/constants/<model>_constants_config.json describe them (a state-dict key -> a storage file and a
// strided view of it: sizes, strides, storage offset; several keys may share one storage).
// float32 is read as is; float16, bfloat16 and float64 are converted to float32 (noted); integer and bool
// tensors become int constants. Pickled payloads (tensor subclasses), other dtypes and non-strided
// layouts are refused naming the key.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "import/pt2/archive.hpp"
#include "import/pt2/program.hpp"
#include "snn/conversion/import/op_graph.hpp"

namespace snn::conversion::pt2 {

class Weights {
 public:
  explicit Weights(Pt2Archive& archive);
  // The tensor of `key` from the state dict (from_constants false) or the constants; `what` names it in
  // messages ("parameter 'features.0.weight'").
  OpConstant load(const std::string& key, bool from_constants, const std::string& what);
  bool has(const std::string& key, bool from_constants) const;
  std::vector<std::string> notes() const;

 private:
  struct Payload {
    std::string path_name;
    bool use_pickle = false;
    TensorMeta meta;
  };
  void read_config(const std::string& relative, bool constants);
  const std::string& storage(const Payload& p, bool constants, const std::string& what);
  Pt2Archive& archive_;
  std::map<std::string, Payload> weights_, constants_;
  std::map<std::string, std::string> storages_;  // storages that more keys still need
  std::map<std::string, int> uses_left_;         // storage -> keys that have not been loaded yet
  std::map<std::string, int> converted_;         // dtype name -> tensors converted to float32
};

}  // namespace snn::conversion::pt2

// JsonView: guarded, read-only access to a parsed JSON document. Every accessor checks the type it
// expects and fails with the JSON path ("graph_module.graph.nodes[3].inputs[1].arg: expected an
// integer"), so a malformed program is a clear pt2::Failure, never nlohmann's own exception.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace snn::conversion::pt2 {

// Parses text as JSON; a syntax error is a Failure naming `what` (the archive entry).
nlohmann::json parse_json(const std::string& text, const std::string& what);

class JsonView {
 public:
  JsonView(const nlohmann::json& j, std::string where) : j_(&j), where_(std::move(where)) {}
  const std::string& where() const { return where_; }
  [[noreturn]] void fail(const std::string& what) const;  // "<where>: what"

  bool is_null() const { return j_->is_null(); }
  bool is_object() const { return j_->is_object(); }
  bool is_array() const { return j_->is_array(); }
  bool is_string() const { return j_->is_string(); }
  bool has(const std::string& key) const;                   // an object with key, not null
  JsonView at(const std::string& key) const;                // fails when absent or null
  std::optional<JsonView> find(const std::string& key) const;
  std::vector<JsonView> items() const;                      // an array's elements
  std::vector<std::pair<std::string, JsonView>> members() const;  // an object's members, in order
  // A union (torch.export's _Union): an object with exactly one member; its key and value.
  std::pair<std::string, JsonView> one_of() const;

  std::string str() const;
  int64_t i64() const;
  double f64() const;  // numbers, and "Infinity", "-Infinity", "NaN" (how torch writes them)
  bool boolean() const;

 private:
  const nlohmann::json* j_;
  std::string where_;
};

}  // namespace snn::conversion::pt2

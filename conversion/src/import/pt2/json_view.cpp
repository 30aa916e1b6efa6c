// JsonView: type-checked access to nlohmann::json with the JSON path in every message.
#include "import/pt2/json_view.hpp"

#include <cmath>
#include <limits>

#include "import/pt2/common.hpp"

namespace snn::conversion::pt2 {

nlohmann::json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(what + " is not valid JSON (" + e.what() + ")");
  }
}

void JsonView::fail(const std::string& what) const { pt2::fail(where_ + ": " + what); }

bool JsonView::has(const std::string& key) const {
  if (!j_->is_object()) return false;
  auto it = j_->find(key);
  return it != j_->end() && !it->is_null();
}

JsonView JsonView::at(const std::string& key) const {
  if (!j_->is_object()) fail("expected an object with '" + key + "'");
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) fail("'" + key + "' is missing");
  return JsonView(*it, where_ + "." + key);
}

std::optional<JsonView> JsonView::find(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return JsonView((*j_)[key], where_ + "." + key);
}

std::vector<JsonView> JsonView::items() const {
  if (!j_->is_array()) fail("expected an array");
  std::vector<JsonView> out;
  out.reserve(j_->size());
  size_t i = 0;
  for (const auto& e : *j_) out.emplace_back(e, where_ + "[" + std::to_string(i++) + "]");
  return out;
}

std::vector<std::pair<std::string, JsonView>> JsonView::members() const {
  if (!j_->is_object()) fail("expected an object");
  std::vector<std::pair<std::string, JsonView>> out;
  out.reserve(j_->size());
  for (auto it = j_->begin(); it != j_->end(); ++it) out.emplace_back(it.key(), JsonView(it.value(), where_ + "." + it.key()));
  return out;
}

std::pair<std::string, JsonView> JsonView::one_of() const {
  if (!j_->is_object() || j_->size() != 1) fail("expected an object with exactly one member (a union)");
  auto it = j_->begin();
  return {it.key(), JsonView(it.value(), where_ + "." + it.key())};
}

std::string JsonView::str() const {
  if (!j_->is_string()) fail("expected a string");
  return j_->get_ref<const std::string&>();
}

int64_t JsonView::i64() const {
  if (j_->is_number_unsigned()) {
    const uint64_t u = j_->get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) fail("integer out of range");
    return int64_t(u);
  }
  if (j_->is_number_integer()) return j_->get<int64_t>();
  fail("expected an integer");
}

double JsonView::f64() const {
  if (j_->is_number()) return j_->get<double>();
  if (j_->is_string()) {
    const std::string& s = j_->get_ref<const std::string&>();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  fail("expected a number");
}

bool JsonView::boolean() const {
  if (!j_->is_boolean()) fail("expected true or false");
  return j_->get<bool>();
}

}  // namespace snn::conversion::pt2

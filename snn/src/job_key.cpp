#include "snn/job_key.hpp"

#include <sstream>

#include "snn/content_digest.hpp"
#include "snn/error.hpp"

namespace snn {

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    require(i + 1 < s.size(), "a field ends in a lone backslash");
    const char c = s[++i];
    require(c == '\\' || c == 't' || c == 'n', std::string("unknown escape \\") + c);
    out += c == 't' ? '\t' : c == 'n' ? '\n' : '\\';
  }
  return out;
}

const JobField* find_field(const JobKey& key, const JobField& like) {
  for (const auto& f : key.fields())
    if (f.kind == like.kind && f.name == like.name) return &f;
  return nullptr;
}
}  // namespace

JobKey& JobKey::add(const std::string& name, const std::string& value) {
  fields_.push_back({JobField::Kind::kOption, name, value});
  return *this;
}

JobKey& JobKey::add_contents(const std::string& name, const std::vector<std::string>& files) {
  fields_.push_back({JobField::Kind::kContents, name, files_content_digest(files)});
  return *this;
}

std::string JobKey::encode() const {
  std::string out;
  for (const auto& f : fields_)
    out += std::string(1, char(f.kind)) + '\t' + escape(f.name) + '\t' + escape(f.value) + '\n';
  return out;
}

JobKey JobKey::decode(const std::string& text) {
  JobKey key;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    require(b != std::string::npos && line.find('\t', b + 1) == std::string::npos && a == 1 &&
                (line[0] == 'o' || line[0] == 'c'),
            "job line " + std::to_string(n) + " is not 'kind<TAB>name<TAB>value'");
    key.fields_.push_back({JobField::Kind(line[0]), unescape(line.substr(2, b - 2)), unescape(line.substr(b + 1))});
  }
  require(text.empty() || text.back() == '\n', "the job text does not end with a newline");
  return key;
}

std::optional<JobDifference> first_difference(const JobKey& before, const JobKey& now) {
  for (const auto& f : now.fields()) {
    const JobField* old = find_field(before, f);
    if (!old) return JobDifference{f.kind, f.name, std::nullopt, f.value};
    if (old->value != f.value) return JobDifference{f.kind, f.name, old->value, f.value};
  }
  for (const auto& f : before.fields())
    if (!find_field(now, f)) return JobDifference{f.kind, f.name, f.value, std::nullopt};
  return std::nullopt;
}

std::string quoted_value(const std::optional<std::string>& value) {
  if (!value) return "not given";
  const bool plain = !value->empty() && value->find_first_of(" \t\n'\",;()") == std::string::npos;
  return plain ? *value : "'" + escape(*value) + "'";
}

std::string describe_change(const JobDifference& d) {
  if (d.kind == JobField::Kind::kContents && d.before && d.now) return "the contents of " + d.name + " changed";
  return d.name + " was " + quoted_value(d.before) + ", now " + quoted_value(d.now);
}

}  // namespace snn

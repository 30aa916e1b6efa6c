// What a run's numbers depend on, field by field: the options as given and the contents (SHA-256) of
// every file it reads. A sweep checkpoint saves its job's key and refuses another job; under mpirun the
// ranks compare theirs with rank 0's. When two keys differ, the first differing field is named in one
// line ("--device was cpu, now cuda"; "the contents of --calib-data 'x' changed"), not two job dumps.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace snn {

struct JobField {
  enum class Kind : char { kOption = 'o', kContents = 'c' };
  Kind kind = Kind::kOption;
  std::string name;   // as the user knows it: "--T", "model", "--calib-data 'fashion-mnist:train'"
  std::string value;  // the option's value, or the files' digest
};

class JobKey {
 public:
  // An option or argument as given.
  JobKey& add(const std::string& name, const std::string& value);
  // The contents of the files behind `name` (all of them, in order; read now).
  JobKey& add_contents(const std::string& name, const std::vector<std::string>& files);
  const std::vector<JobField>& fields() const { return fields_; }

  // Text, one line per field ("o<TAB>--T<TAB>16"; tabs, newlines and backslashes escaped), and back;
  // decode refuses malformed text with an Error.
  std::string encode() const;
  static JobKey decode(const std::string& text);
  bool operator==(const JobKey& other) const { return encode() == other.encode(); }
  bool operator!=(const JobKey& other) const { return !(*this == other); }

 private:
  std::vector<JobField> fields_;
};

struct JobDifference {
  JobField::Kind kind;
  std::string name;
  std::optional<std::string> before, now;  // absent: the field is not in that key
};
// The first field (in `now`'s order, then fields only `before` has) whose value differs.
std::optional<JobDifference> first_difference(const JobKey& before, const JobKey& now);
// "--device was cpu, now cuda", "the contents of model 'm.snn.h5' changed", "--compare was not given, now none,ftbc".
std::string describe_change(const JobDifference& d);
// A value for a message: quoted when empty or when it holds spaces or punctuation that would blur it.
std::string quoted_value(const std::optional<std::string>& value);

}  // namespace snn

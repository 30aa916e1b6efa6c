#include "job_keys.hpp"

#include <cstdio>
#include <filesystem>

namespace snnc {

void add_data_fields(snn::JobKey& key, const std::string& option, const std::string& spec) {
  // dataset_inputs may name a file the spec could mean but the loader did not read (a CIFAR directory's
  // CIFAR-100 test.bin): the data is loaded by now, so every file it needs is there.
  std::vector<std::string> files;
  for (const auto& f : dataset_inputs(spec)) {
    std::error_code ec;
    if (std::filesystem::exists(f, ec)) files.push_back(f);
  }
  key.add(option, spec).add_contents(option + " '" + spec + "'", files);
}

snn::JobKey run_job_key(const std::string& model, const std::string& data_option, const std::string& data,
                        const RunOptions& o) {
  snn::JobKey key;
  key.add("model", model).add_contents("model '" + model + "'", {model});
  if (!data.empty()) add_data_fields(key, data_option, data);
  key.add("--limit", std::to_string(o.limit)).add("--batch-size", std::to_string(o.batch_size));
  return key.add("--device", o.device);
}

std::string exact_number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

}  // namespace snnc

// The job keys of snnc's data-parallel commands (snn/job_key.hpp): the options as given and the contents
// of every file the run reads, for agree_on_job (every MPI rank must see the same files) and for sweep
// checkpoints (a resume must find the same files it was started with).
#pragma once
#include <string>

#include "common.hpp"
#include "snn/job_key.hpp"

namespace snnc {

// model (its path and contents), the data option (its spec and the contents of every file behind it:
// an IDX pair, all CIFAR batches; left out when `data` is empty: a method that reads none), --limit,
// --batch-size and --device.
snn::JobKey run_job_key(const std::string& model, const std::string& data_option, const std::string& data,
                        const RunOptions& o);
// A data option's spec and its files' contents (e.g. --calib-data).
void add_data_fields(snn::JobKey& key, const std::string& option, const std::string& spec);
// A real number for a key: exact (17 digits), so 0.5 and 0.5000001 differ.
std::string exact_number(double v);

}  // namespace snnc

// Registration of optional backends (CUDA) so that make_backend can offer them without the core
// depending on them. The CUDA backend registers itself from its own library (linked whole).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "snn/backend.hpp"

namespace snn {

// gpu: which GPU of this host to use (taken modulo the GPUs present); < 0 = the current one.
using BackendFactory = std::function<std::unique_ptr<Backend>(int threads, int gpu)>;
// Returns false and says why (e.g. no GPU) when the backend cannot run on this machine.
using BackendAvailable = std::function<bool(std::string* why)>;
// Returns true, so that a namespace-scope `const bool registered = register_backend(...)` runs it at start-up.
bool register_backend(const std::string& name, BackendFactory factory, BackendAvailable available);

}  // namespace snn

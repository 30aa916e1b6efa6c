// The GPU the CUDA backend runs on (the current CUDA device) and raw device memory. Everything here is
// callable from plain C++ (no CUDA headers needed); failures throw snn::Error naming the call.
#pragma once
#include <cstddef>
#include <string>

namespace snn::cuda {

// True when a CUDA device can be used; otherwise false and *why says what is missing.
bool device_available(std::string* why = nullptr);
std::string device_name();
// Makes GPU (ordinal mod the number of GPUs) current for this host thread.
void select_device(int ordinal);
// Waits for all queued device work; `where` names the caller in an error.
void synchronize(const std::string& where = "cuda backend");

// Raw device memory. device_alloc throws (naming the size) when the device is out of memory;
// device_free never throws and ignores null.
void* device_alloc(size_t bytes);
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);
void copy_on_device(void* dst, const void* src, size_t bytes);
void zero_device(void* p, size_t bytes);

}  // namespace snn::cuda

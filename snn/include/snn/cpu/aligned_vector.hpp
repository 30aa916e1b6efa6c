// std::vector whose storage starts on a 64-byte cache line. The event kernels load weight rows of 16
// floats (one AVX-512 register, one cache line): from a 16-byte-aligned std::vector every such load
// splits across two lines, which measured 1.7× slower in the gather loop (bench/README.md).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

#include "snn/memory.hpp"

namespace snn::cpu {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::size_t kAlignment = 64;

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  // Large buffers (weights, partial sums) are advised to huge pages before their first touch.
  T* allocate(std::size_t n) {
    T* p = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlignment)));
    if (n * sizeof(T) >= kHugePageAdviceBytes) advise_huge_pages(p, n * sizeof(T));
    return p;
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t(kAlignment)); }

  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const noexcept { return false; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace snn::cpu

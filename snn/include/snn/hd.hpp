// SNN_HD marks the few functions that every backend shares: compiled for the host everywhere, and also
// for the device when a CUDA compiler reads the header. The core itself never needs CUDA to build.
#pragma once
#if defined(__CUDACC__)
#define SNN_HD __host__ __device__ __forceinline__
#else
#define SNN_HD inline
#endif

#!/usr/bin/env bash
# The GPU checks in one script, for a machine with a GPU but without this project's Debian packages
# (the lent H200 machine): builds the CUDA kernels, their CPU-twin tests and the kernel benchmark with
# nvcc alone (header-only parts of the core; Catch2 and nlohmann-json headers are carried in
# .device-headers/, made on the dev machine by `cuda/run_device_checks.sh --prepare`), runs them, and
# writes the results to $OUT (or ./device-results).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--prepare" ]; then
  mkdir -p .device-headers
  cp -r /usr/include/catch2 /usr/include/nlohmann .device-headers/
  echo "headers ready in .device-headers (carry it)"; exit 0
fi
OUT=${OUT:-device-results}
mkdir -p "$OUT" build-device
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ARCH=${CUDA_ARCH:-sm_90}
INC="-I snn/include -I cuda/include -I .device-headers -I tests/cuda"
FLAGS="-std=c++17 -O3 -arch=$ARCH -lineinfo --expt-relaxed-constexpr -Xcompiler -ffp-contract=off"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
$NVCC $FLAGS $INC cuda/src/device.cu cuda/src/neuron_kernels.cu -x cu tests/cuda/cuda_main.cpp \
  -x cu tests/cuda/test_neuron_kernels.cpp -o build-device/cuda_tests 2>&1 | tee "$OUT/build.txt"
$NVCC $FLAGS $INC cuda/src/device.cu cuda/src/neuron_kernels.cu -x cu bench/cuda/neuron_kernel_bench.cpp \
  -o build-device/neuron_kernel_bench 2>&1 | tee -a "$OUT/build.txt"
build-device/cuda_tests 2>&1 | tee "$OUT/cuda_tests.txt"
build-device/neuron_kernel_bench | tee "$OUT/neuron_kernel_bench.json"

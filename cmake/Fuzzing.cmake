# SNN_FUZZ=ON: libFuzzer targets for the file readers (tests/fuzz). Needs clang. Everything is compiled
# with coverage instrumentation plus ASan/UBSan (-fsanitize=fuzzer-no-link); only the targets link the
# libFuzzer driver. LibTorch and CUDA are left out: the readers under test do not need them.
option(SNN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only; no LibTorch, no CUDA)" OFF)
if(SNN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SNN_FUZZ=ON needs clang (e.g. -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14)")
  endif()
  if(SNN_WITH_TORCH STREQUAL "ON" OR SNN_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SNN_FUZZ=ON builds without LibTorch and CUDA: set SNN_WITH_TORCH=OFF SNN_WITH_CUDA=OFF")
  endif()
  set(SNN_WITH_TORCH OFF CACHE STRING "" FORCE)
  set(SNN_WITH_CUDA OFF CACHE STRING "" FORCE)
  set(SNN_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${SNN_FUZZ_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "snnc: libFuzzer build")
endif()

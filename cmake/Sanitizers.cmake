# SNN_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer over everything this project compiles
# (the core, the CLI, the tests). UB aborts (-fno-sanitize-recover) so that ctest sees it as a failure.
# GCC's "undefined" leaves out float-cast-overflow (a double outside an integer's range converted to it,
# as from a damaged file's attribute); clang's includes it: both builds check it.
# LibTorch and CUDA are not built with ASan: this build leaves them out. .ci/sanitize-and-fuzz runs it.
option(SNN_SANITIZE "Build with -fsanitize=address,undefined (no LibTorch, no CUDA)" OFF)
if(SNN_SANITIZE)
  if(SNN_WITH_TORCH STREQUAL "ON" OR SNN_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SNN_SANITIZE=ON builds without LibTorch and CUDA: set SNN_WITH_TORCH=OFF SNN_WITH_CUDA=OFF")
  endif()
  set(SNN_WITH_TORCH OFF CACHE STRING "" FORCE)
  set(SNN_WITH_CUDA OFF CACHE STRING "" FORCE)
  set(SNN_SANITIZER_FLAGS -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow -fno-omit-frame-pointer -g)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${SNN_SANITIZER_FLAGS}>")
  add_link_options(${SNN_SANITIZER_FLAGS})
  message(STATUS "snnc: sanitizer build (ASan + UBSan)")
endif()

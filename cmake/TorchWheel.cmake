# LibTorch from the torch wheel in the project's venv (SNN_TORCH_WHEEL_DIR = .../site-packages/torch), for
# the TorchScript importer. Included by the top-level CMakeLists.txt, which says why the wheel's own
# TorchConfig.cmake is not used. Defines the imported target snn::libtorch and sets TORCH_LIBRARIES to it
# (what conversion/ and tests/conversion/ link, as with find_package(Torch)).
#
# Only the CPU part: libtorch_cpu.so and libc10.so. libtorch_cpu.so needs libcudart and libcupti from the
# venv's nvidia/cu13/lib, and libgomp.so.1. Our binaries get the wheel's torch/lib and nvidia/cu13/lib in
# their RUNPATH, so that build/tools/snnc runs without LD_LIBRARY_PATH (libtorch_cpu.so also finds libcudart
# itself, through its own RPATH $ORIGIN/../../nvidia/cu13/lib).
#
# OpenMP: the wheel ships its own libgomp.so.1 (GCC 10's, symbols up to GOMP_5.0) beside libtorch_cpu.so;
# snn is compiled by GCC 12 against the system's (up to GOMP_5.1). It is one soname, so a process never
# maps both: the first one loaded serves every later request for libgomp.so.1. In binaries that link the
# importer (snnc, torch_import_tests, the Python module) torch/lib comes first in the RUNPATH, so that is
# the wheel's; snn's code needs only symbols up to GOMP_4.5, which it has, and torch needs only GOMP_4.0
# and OMP_1.0, which the system's has (in Python, `import snnc` before `import torch` gives the system's).
# snnc's results do not depend on which (the tests compare them bit for bit). The system's lib folder
# must not go into the RUNPATH to prefer its libgomp: Debian's libtorch-dev puts a libc10.so and a
# libtorch_cpu.so there, which would then win over the wheel's.
# These folders are linker flags rather than full library paths, so that CMake does not also compute an
# RPATH for them (and warn that torch/lib hides the system's libgomp).
set(torch_lib_dir ${SNN_TORCH_WHEEL_DIR}/lib)
get_filename_component(torch_site_packages ${SNN_TORCH_WHEEL_DIR} DIRECTORY)
set(torch_cuda_runtime_dir ${torch_site_packages}/nvidia/cu13/lib)
foreach(f ${torch_lib_dir}/libtorch_cpu.so ${torch_lib_dir}/libc10.so ${SNN_TORCH_WHEEL_DIR}/include/torch/script.h)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "The torch wheel in ${SNN_TORCH_WHEEL_DIR} lacks ${f} (reinstall: .ci/install-deps)")
  endif()
endforeach()

# The C++ ABI: wheels since torch 2.7 are built with the new (C++11) std::string ABI, as is everything
# here (GCC's default). A wheel with the old ABI would link but pass broken strings at run time.
file(STRINGS ${torch_lib_dir}/libc10.so torch_abi_probe LIMIT_COUNT 1 REGEX "St7__cxx1112basic_string")
if(NOT torch_abi_probe)
  message(FATAL_ERROR "${torch_lib_dir}/libc10.so was not built with the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1); "
                      "snnc needs a torch wheel that is (torch >= 2.7), or -DSNN_TORCH_FROM_VENV=OFF")
endif()

set(torch_version "?")
if(EXISTS ${SNN_TORCH_WHEEL_DIR}/version.py)
  file(STRINGS ${SNN_TORCH_WHEEL_DIR}/version.py torch_version_line REGEX "^__version__ *=")
  string(REGEX REPLACE ".*['\"]([^'\"]+)['\"].*" "\\1" torch_version "${torch_version_line}")
endif()
set(SNN_TORCH_VERSION ${torch_version})

add_library(snn::libtorch INTERFACE IMPORTED)
set(torch_runpath)
list(APPEND torch_runpath ${torch_lib_dir})
set(torch_link)
if(EXISTS ${torch_cuda_runtime_dir})
  list(APPEND torch_runpath ${torch_cuda_runtime_dir})
  # The linker checks libtorch_cpu.so's own needs (libcudart.so.13, libcupti.so.13) at link time.
  list(APPEND torch_link "-Wl,-rpath-link,${torch_cuda_runtime_dir}")
endif()
foreach(dir ${torch_runpath})
  list(APPEND torch_link "-Wl,-rpath,${dir}")
endforeach()
list(APPEND torch_link "-L${torch_lib_dir}" -ltorch_cpu -lc10)
set_target_properties(snn::libtorch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${SNN_TORCH_WHEEL_DIR}/include;${SNN_TORCH_WHEEL_DIR}/include/torch/csrc/api/include"
  INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1"
  INTERFACE_COMPILE_FEATURES cxx_std_20  # torch 2.15 headers need C++20; only targets that include them
  INTERFACE_LINK_LIBRARIES "${torch_link}")
set(TORCH_LIBRARIES snn::libtorch)
set(TORCH_INSTALL_RPATH ${torch_runpath})
set(SNN_TORCH_INFO " (torch ${torch_version} wheel: ${SNN_TORCH_WHEEL_DIR})")

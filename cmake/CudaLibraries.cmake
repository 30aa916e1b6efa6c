# CudaLibraries.cmake: imported targets for the NVIDIA libraries the CUDA backend calls.
#
#   snn::cudnn   cuDNN (libcudnn, cudnn.h)                    convolutions over the T×B batch
#   snn::cublas  cuBLAS + cuBLASLt (libcublas, cublas_v2.h)   linear layers over the T×B batch
#
# Where they are searched, in this order (the first place that has both the header and the library
# wins, so a header never pairs with another installation's library):
#   1. the CUDA toolkit that find_package(CUDAToolkit) found (CUDA::cublas / CUDA::cublasLt are used
#      as they are when the toolkit provides them);
#   2. each prefix in the cache variable SNN_CUDA_LIB_HINTS (a ;-list; the environment variable of the
#      same name is the default), each holding include/ and lib/ (or lib64/): the layout of the pip
#      wheels, e.g. .../site-packages/nvidia/cudnn and, from CUDA 13 on, .../site-packages/nvidia/cu13;
#   3. CMake's default search paths.
# pip wheels ship only versioned files (libcudnn.so.9, libcublas.so.13) without the unversioned
# libcudnn.so symlink; those are found too. To force a location, set SNN_CUDNN_INCLUDE_DIR and
# SNN_CUDNN_LIBRARY (likewise SNN_CUBLAS_*, SNN_CUBLASLT_LIBRARY) in the cache.
#
# Included by cuda/CMakeLists.txt after find_package(CUDAToolkit).
include_guard(GLOBAL)

if(NOT CUDAToolkit_FOUND)
  find_package(CUDAToolkit REQUIRED)
endif()

if(NOT DEFINED SNN_CUDA_LIB_HINTS AND DEFINED ENV{SNN_CUDA_LIB_HINTS})
  set(_snn_hints_default "$ENV{SNN_CUDA_LIB_HINTS}")
  string(REPLACE ":" ";" _snn_hints_default "${_snn_hints_default}")
else()
  set(_snn_hints_default "")
endif()
set(SNN_CUDA_LIB_HINTS "${_snn_hints_default}" CACHE STRING
    "Extra prefixes (;-list, each with include/ and lib/) searched for cuDNN and cuBLAS after the CUDA toolkit")

# The shared library lib<name> in one of `dirs`: lib<name>.so first, else the shortest versioned
# lib<name>.so.N[.M...] (the SONAME-like one: libcudnn.so.9 before libcudnn.so.9.10.2).
function(_snn_cuda_lib_in_dirs out name)
  set(found "")
  foreach(dir IN LISTS ARGN)
    if(EXISTS "${dir}/lib${name}.so")
      set(found "${dir}/lib${name}.so")
      break()
    endif()
    file(GLOB versioned LIST_DIRECTORIES false "${dir}/lib${name}.so.[0-9]*")
    set(best "")
    foreach(candidate IN LISTS versioned)
      string(LENGTH "${candidate}" len)
      if(best STREQUAL "" OR len LESS best_len)
        set(best "${candidate}")
        set(best_len ${len})
      endif()
    endforeach()
    if(NOT best STREQUAL "")
      set(found "${best}")
      break()
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The search locations, in order, as parallel lists of include dirs and lib dirs (one entry per
# location; an entry may itself hold several dirs separated by '|').
set(_snn_loc_inc "")
set(_snn_loc_lib "")
set(_snn_tk_inc ${CUDAToolkit_INCLUDE_DIRS})
set(_snn_tk_lib ${CUDAToolkit_LIBRARY_DIR})
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _snn_tk_inc "${CUDAToolkit_LIBRARY_ROOT}/include")
  list(APPEND _snn_tk_lib "${CUDAToolkit_LIBRARY_ROOT}/lib64" "${CUDAToolkit_LIBRARY_ROOT}/lib")
endif()
string(REPLACE ";" "|" _snn_tk_inc "${_snn_tk_inc}")
string(REPLACE ";" "|" _snn_tk_lib "${_snn_tk_lib}")
list(APPEND _snn_loc_inc "${_snn_tk_inc}")
list(APPEND _snn_loc_lib "${_snn_tk_lib}")
foreach(prefix IN LISTS SNN_CUDA_LIB_HINTS)
  if(NOT prefix STREQUAL "")
    list(APPEND _snn_loc_inc "${prefix}/include")
    list(APPEND _snn_loc_lib "${prefix}/lib|${prefix}/lib64")
  endif()
endforeach()
list(LENGTH _snn_loc_inc _snn_loc_count)
math(EXPR _snn_loc_last "${_snn_loc_count} - 1")

# Finds `header` and lib<libname> (plus each lib<extra> in EXTRA, from the same place) and stores
# them in the cache as <VAR>_INCLUDE_DIR, <VAR>_LIBRARY and <EXTRAVAR>_LIBRARY. Sets <VAR>_WHERE.
function(_snn_find_cuda_component VAR header libname)
  cmake_parse_arguments(ARG "" "" "EXTRA;EXTRAVARS" ${ARGN})
  set(have TRUE)
  foreach(v IN ITEMS ${VAR}_INCLUDE_DIR ${VAR}_LIBRARY)
    if(NOT ${v} OR NOT EXISTS "${${v}}")
      set(have FALSE)
    endif()
  endforeach()
  foreach(ev IN LISTS ARG_EXTRAVARS)
    if(NOT ${ev}_LIBRARY OR NOT EXISTS "${${ev}_LIBRARY}")
      set(have FALSE)
    endif()
  endforeach()
  if(have)
    set(${VAR}_WHERE "cache" PARENT_SCOPE)
    return()
  endif()

  # 1 + 2: the toolkit, then the hints; header and libraries from the same location.
  foreach(i RANGE ${_snn_loc_last})
    list(GET _snn_loc_inc ${i} incs)
    list(GET _snn_loc_lib ${i} libs)
    string(REPLACE "|" ";" incs "${incs}")
    string(REPLACE "|" ";" libs "${libs}")
    set(inc_found "")
    foreach(inc IN LISTS incs)
      if(EXISTS "${inc}/${header}")
        set(inc_found "${inc}")
        break()
      endif()
    endforeach()
    if(inc_found STREQUAL "")
      continue()
    endif()
    _snn_cuda_lib_in_dirs(lib_found ${libname} ${libs})
    if(lib_found STREQUAL "")
      continue()
    endif()
    set(extras_ok TRUE)
    set(extra_paths "")
    foreach(extra IN LISTS ARG_EXTRA)
      _snn_cuda_lib_in_dirs(extra_found ${extra} ${libs})
      if(extra_found STREQUAL "")
        set(extras_ok FALSE)
      endif()
      list(APPEND extra_paths "${extra_found}")
    endforeach()
    if(NOT extras_ok)
      continue()
    endif()
    set(${VAR}_INCLUDE_DIR "${inc_found}" CACHE PATH "Directory holding ${header}" FORCE)
    set(${VAR}_LIBRARY "${lib_found}" CACHE FILEPATH "lib${libname}" FORCE)
    set(j 0)
    foreach(ev IN LISTS ARG_EXTRAVARS)
      list(GET extra_paths ${j} p)
      list(GET ARG_EXTRA ${j} en)
      set(${ev}_LIBRARY "${p}" CACHE FILEPATH "lib${en}" FORCE)
      math(EXPR j "${j} + 1")
    endforeach()
    set(${VAR}_WHERE "${inc_found} + ${lib_found}" PARENT_SCOPE)
    return()
  endforeach()

  # 3: CMake's default paths, each piece on its own.
  find_path(${VAR}_INCLUDE_DIR NAMES ${header})
  set(names ${libname})
  foreach(v RANGE 8 20)
    list(APPEND names "lib${libname}.so.${v}")
  endforeach()
  find_library(${VAR}_LIBRARY NAMES ${names} NAMES_PER_DIR)
  set(j 0)
  foreach(ev IN LISTS ARG_EXTRAVARS)
    list(GET ARG_EXTRA ${j} en)
    set(enames ${en})
    foreach(v RANGE 8 20)
      list(APPEND enames "lib${en}.so.${v}")
    endforeach()
    find_library(${ev}_LIBRARY NAMES ${enames} NAMES_PER_DIR)
    math(EXPR j "${j} + 1")
  endforeach()
  set(${VAR}_WHERE "default search paths" PARENT_SCOPE)
endfunction()

function(_snn_cuda_missing what)
  string(REPLACE ";" "\n    " hints "${SNN_CUDA_LIB_HINTS}")
  if(hints STREQUAL "")
    set(hints "(none set)")
  endif()
  string(REPLACE ";" " " tk "${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR}")
  message(FATAL_ERROR
    "snnc: not found: ${what}.\n"
    "  Searched the CUDA toolkit (${tk}), the prefixes in SNN_CUDA_LIB_HINTS:\n    ${hints}\n"
    "  and CMake's default paths.\n"
    "  Set SNN_CUDA_LIB_HINTS to a ;-list of prefixes that each hold include/ and lib/, e.g. for the\n"
    "  pip wheels: -DSNN_CUDA_LIB_HINTS=\"<site-packages>/nvidia/cudnn;<site-packages>/nvidia/cu13\"\n"
    "  (tests/gpu/run.sh does this), or set the cache variables named above directly.")
endfunction()

# --- cuDNN ------------------------------------------------------------------------------------------
if(NOT TARGET snn::cudnn)
  _snn_find_cuda_component(SNN_CUDNN cudnn.h cudnn)
  if(NOT SNN_CUDNN_INCLUDE_DIR OR NOT SNN_CUDNN_LIBRARY)
    set(_m "")
    if(NOT SNN_CUDNN_INCLUDE_DIR)
      list(APPEND _m "the header cudnn.h (SNN_CUDNN_INCLUDE_DIR)")
    endif()
    if(NOT SNN_CUDNN_LIBRARY)
      list(APPEND _m "the library libcudnn.so[.N] (SNN_CUDNN_LIBRARY)")
    endif()
    string(REPLACE ";" " and " _m "${_m}")
    _snn_cuda_missing("cuDNN: ${_m}")
  endif()
  add_library(snn::cudnn SHARED IMPORTED GLOBAL)
  set_target_properties(snn::cudnn PROPERTIES
    IMPORTED_LOCATION "${SNN_CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SNN_CUDNN_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES CUDA::cudart)
  message(STATUS "snnc: cuDNN from ${SNN_CUDNN_WHERE}: ${SNN_CUDNN_LIBRARY}")
endif()

# --- cuBLAS + cuBLASLt ------------------------------------------------------------------------------
if(NOT TARGET snn::cublas)
  add_library(snn::cublas INTERFACE IMPORTED GLOBAL)
  if(TARGET CUDA::cublas AND TARGET CUDA::cublasLt)
    set_target_properties(snn::cublas PROPERTIES
      INTERFACE_LINK_LIBRARIES "CUDA::cublas;CUDA::cublasLt;CUDA::cudart")
    get_target_property(_snn_cublas_loc CUDA::cublas IMPORTED_LOCATION)
    message(STATUS "snnc: cuBLAS from the CUDA toolkit: ${_snn_cublas_loc}")
  else()
    _snn_find_cuda_component(SNN_CUBLAS cublas_v2.h cublas EXTRA cublasLt EXTRAVARS SNN_CUBLASLT)
    set(_m "")
    if(NOT SNN_CUBLAS_INCLUDE_DIR)
      list(APPEND _m "the header cublas_v2.h (SNN_CUBLAS_INCLUDE_DIR)")
    endif()
    if(NOT SNN_CUBLAS_LIBRARY)
      list(APPEND _m "the library libcublas.so[.N] (SNN_CUBLAS_LIBRARY)")
    endif()
    if(NOT SNN_CUBLASLT_LIBRARY)
      list(APPEND _m "the library libcublasLt.so[.N] (SNN_CUBLASLT_LIBRARY)")
    endif()
    if(_m)
      string(REPLACE ";" " and " _m "${_m}")
      _snn_cuda_missing("cuBLAS: ${_m}")
    endif()
    add_library(snn::cublasLt_lib SHARED IMPORTED GLOBAL)
    set_target_properties(snn::cublasLt_lib PROPERTIES IMPORTED_LOCATION "${SNN_CUBLASLT_LIBRARY}")
    add_library(snn::cublas_lib SHARED IMPORTED GLOBAL)
    set_target_properties(snn::cublas_lib PROPERTIES
      IMPORTED_LOCATION "${SNN_CUBLAS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${SNN_CUBLAS_INCLUDE_DIR}")
    set_target_properties(snn::cublas PROPERTIES
      INTERFACE_LINK_LIBRARIES "snn::cublas_lib;snn::cublasLt_lib;CUDA::cudart")
    message(STATUS "snnc: cuBLAS from ${SNN_CUBLAS_WHERE}: ${SNN_CUBLAS_LIBRARY}")
  endif()
endif()

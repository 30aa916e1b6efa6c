# `pip install .` (pyproject.toml, scikit-build-core, which defines SKBUILD): the settings of a package
# build, included by the top-level CMakeLists.txt before anything is found.
#  - The Python is the one pip builds for (scikit-build-core passes Python_EXECUTABLE); the project's own
#    .venv (SNN_VENV) plays no part: a package must not point into the source checkout.
#  - LibTorch: the torch of that Python when it can import one (a --no-build-isolation build in a venv with
#    PyPI's torch: the TorchScript importer is linked to that very wheel, so the package stays tied to that
#    environment); an isolated build has no torch and leaves the importer out (.pt2 and ONNX need none).
#  - No tests, benches or examples; CUDA only when asked (--config-settings=cmake.define.SNN_WITH_CUDA=AUTO or ON).
# What goes into the package is the install component "python" (python/CMakeLists.txt and the rules in
# snnc_install_python_package() below).
set(SNN_BUILD_BENCHES OFF)
set(SNN_BUILD_EXAMPLES OFF)
set(SNN_TORCH_FROM_VENV OFF CACHE BOOL "" FORCE)
unset(SNN_PYTHON_EXECUTABLE CACHE)
set(SNN_PYTHON_EXECUTABLE ${Python_EXECUTABLE} CACHE FILEPATH "the Python pip builds for" FORCE)
if(NOT SNN_WITH_TORCH STREQUAL "OFF")
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import os, torch; print(os.path.dirname(torch.__file__))"
                  OUTPUT_VARIABLE package_torch_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE no_torch)
  if(NOT no_torch AND EXISTS ${package_torch_dir}/lib/libtorch_cpu.so)
    set(SNN_TORCH_WHEEL_DIR ${package_torch_dir})
    message(STATUS "snnc package: TorchScript importer linked to ${package_torch_dir} (this environment's torch)")
  else()
    set(SNN_WITH_TORCH OFF)
    message(STATUS "snnc package: no torch in the build environment (pip's isolated build): TorchScript "
                   "importer OFF; .pt2 and ONNX are read natively. For TorchScript, build with "
                   "pip install --no-build-isolation . in a venv with PyPI's torch")
  endif()
endif()

# The package's install rules: the CLI into the environment's bin/ (a venv's, beside its python3, which the
# CLI then runs the reference runtime with), and the reference runtime's script where that CLI looks for
# it (PREFIX/share/snnc) and inside the package (where snnc/__init__.py points the module at it).
function(snnc_install_python_package)
  if(TARGET snnc)
    install(PROGRAMS $<TARGET_FILE:snnc> DESTINATION ${SKBUILD_SCRIPTS_DIR} COMPONENT python)
  endif()
  if(TARGET snn_conversion)
    install(FILES ${SNN_REFERENCE_SCRIPT} DESTINATION ${SKBUILD_DATA_DIR}/share/snnc COMPONENT python)
    install(FILES ${SNN_REFERENCE_SCRIPT} DESTINATION snnc RENAME _reference_runtime.py COMPONENT python)
  endif()
endfunction()

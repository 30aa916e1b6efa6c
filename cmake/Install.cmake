# cmake --install BUILD --prefix P: the headers, the libraries, the snnc CLI, and a CMake package so that
# another project can
#   find_package(snnc REQUIRED)
#   target_link_libraries(app PRIVATE snnc::snn)          # the core: simulator, CPU backend, files
#   target_link_libraries(app PRIVATE snnc::conversion)   # + calibration (FTBC, light, rts), thresholds
#   target_link_libraries(app PRIVATE snnc::cuda)         # + the CUDA backend (when it was built)
# The TorchScript importer stays a feature of the CLI (it would drag LibTorch into every consumer).
include(CMakePackageConfigHelpers)
set(SNNC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/snnc)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/snn/include/snn ${PROJECT_SOURCE_DIR}/conversion/include/snn
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.hpp")
set_target_properties(snn_core PROPERTIES EXPORT_NAME core)
set(snnc_export_targets snn_core snn)
if(TARGET snn_conversion)
  set_target_properties(snn_conversion PROPERTIES EXPORT_NAME conversion)
  list(APPEND snnc_export_targets snn_conversion)
endif()
if(TARGET snn_cuda)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/cuda/include/snn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp")
  set_target_properties(snn_cuda_core PROPERTIES EXPORT_NAME cuda_core)
  set_target_properties(snn_cuda PROPERTIES EXPORT_NAME cuda)
  list(APPEND snnc_export_targets snn_cuda_core snn_cuda)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/CudaLibraries.cmake DESTINATION ${SNNC_CMAKE_DIR})
endif()
install(TARGETS ${snnc_export_targets} EXPORT snncTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The CLI as built, RPATH included: CMake's RPATH rewrite trips over the importer's link line (an empty
# entry it expects but the linker drops), and the build RPATH only names the libraries' own folders.
install(PROGRAMS $<TARGET_FILE:snnc> DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT snncTargets NAMESPACE snnc:: DESTINATION ${SNNC_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/snncConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/snncConfig.cmake INSTALL_DESTINATION ${SNNC_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/snncConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/snncConfig.cmake ${PROJECT_BINARY_DIR}/snncConfigVersion.cmake
        DESTINATION ${SNNC_CMAKE_DIR})

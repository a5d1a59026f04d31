# cpack -G DEB (in the build directory): megascale_<version>_amd64.deb with what `cmake --install` installs (the
# library, headers, CMake package, pkg-config file, NCCL net plugin, tools, the PyTorch module) under /usr.
# Depends: only the shared libraries that the library and the programs link, as dpkg-shlibdeps names their
# packages when cpack runs. Recommends: what is opened at run time and only when present (ibverbs, UCX, DPDK,
# CUDA, PyTorch), so neither the DPDK module nor the PyTorch module makes its libraries hard dependencies.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME megascale)
set(CPACK_PACKAGE_VENDOR megascale)
set(CPACK_PACKAGE_CONTACT "megascale developers <megascale@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "collective communication library and 3D-parallel LLM trainer for RoCE GPU clusters")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libibverbs1, ibverbs-providers, libucx0, librte-eal23, librte-ethdev23, librte-net-af-packet23, python3-torch")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-cuda-toolkit, libnccl2, slurm-client, openmpi-bin")

# The files whose linked libraries every run needs.
set(_linked_by_every_run)
foreach(target megascale megascale-run megascale-diagnose megascale-store megascale-selfcheck megascale-train
               megascale-tokenize megascale-sim nccl-net-megascale all_reduce_perf all_gather_perf reduce_scatter_perf
               broadcast_perf reduce_perf alltoall_perf alltoallv_perf sendrecv_perf)
  if(TARGET ${target})
    list(APPEND _linked_by_every_run "$<TARGET_FILE:${target}>")
  endif()
endforeach()
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/CPackDebDepends.cmake CONTENT
"# Read by cpack: Depends from dpkg-shlibdeps over the files every run loads (cmake/Package.cmake).
if(CPACK_GENERATOR STREQUAL \"DEB\")
  set(_dir \"${PROJECT_BINARY_DIR}/deb-depends\")
  file(MAKE_DIRECTORY \"\${_dir}/debian\")
  file(WRITE \"\${_dir}/debian/control\" \"Source: megascale\\n\\nPackage: megascale\\nArchitecture: any\\n\")
  execute_process(COMMAND dpkg-shlibdeps -O --ignore-missing-info \"-l${PROJECT_BINARY_DIR}\"
                          $<JOIN:${_linked_by_every_run}, >
                  WORKING_DIRECTORY \"\${_dir}\" OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  string(REGEX MATCH \"shlibs:Depends=([^\\n]*)\" _match \"\${_out}\")
  if(NOT _rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR \"dpkg-shlibdeps failed (\${_rc}): \${_err}\")
  endif()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS \"\${CMAKE_MATCH_1}\")
endif()
")
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/CPackDebDepends.cmake)
include(CPack)

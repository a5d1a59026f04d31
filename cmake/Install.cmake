# cmake --install: headers, libmegascale.so, the megascale-* programs, a CMake package and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS megascale EXPORT megascaleTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/megascale DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT megascaleTargets NAMESPACE megascale:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/megascale)

configure_package_config_file(cmake/megascaleConfig.cmake.in ${PROJECT_BINARY_DIR}/megascaleConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/megascale)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/megascaleConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/megascaleConfig.cmake ${PROJECT_BINARY_DIR}/megascaleConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/megascale)

file(RELATIVE_PATH MEGASCALE_PC_PREFIX_FROM_PCDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/megascale.pc.in ${PROJECT_BINARY_DIR}/megascale.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/megascale.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

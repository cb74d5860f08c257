# Install: the libraries, headers, CMake package and pkg-config files, in the
# components the Debian packages are made of (cmake/package.cmake):
#   lib       libtapegrad.so.0                    dist      libtapegrad-dist.so.0
#   dev       headers, libtapegrad.{a,so}, tapegrad.pc, CMake package
#   distdev   dist/dist.h, libtapegrad-dist.{a,so}, tapegrad-dist.pc, tapegrad::dist
#   bin       seqtask
# Only the dist components know about MPI.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(TAPEGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tapegrad)

# A shared library or program installed outside the loader's own directories
# finds its libraries through an rpath relative to itself.
set(TAPEGRAD_SYSTEM_LIBDIRS ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES} ${CMAKE_PLATFORM_IMPLICIT_LINK_DIRECTORIES})
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(TAPEGRAD_INSTALL_LIBDIR_ABS "${CMAKE_INSTALL_LIBDIR}")
else()
  set(TAPEGRAD_INSTALL_LIBDIR_ABS "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(BUILD_SHARED_LIBS AND NOT TAPEGRAD_INSTALL_LIBDIR_ABS IN_LIST TAPEGRAD_SYSTEM_LIBDIRS)
  file(RELATIVE_PATH bin_to_lib /${CMAKE_INSTALL_BINDIR} /${CMAKE_INSTALL_LIBDIR})
  set_target_properties(tapegrad_dist PROPERTIES INSTALL_RPATH "$ORIGIN")
  if(TARGET seqtask)
    set_target_properties(seqtask PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  endif()
endif()

install(TARGETS tapegrad EXPORT tapegradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev)
install(TARGETS tapegrad_dist EXPORT tapegradDistTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT distdev
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dist NAMELINK_COMPONENT distdev)
if(TARGET tapegrad_static)  # TAPEGRAD_INSTALL_STATIC: the archives beside the shared libraries
  install(TARGETS tapegrad_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(TARGETS tapegrad_dist_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT distdev)
endif()
if(TARGET seqtask)
  install(TARGETS seqtask RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT bin)
endif()
install(FILES tapegrad.h DESTINATION include/tapegrad COMPONENT dev)
# Internal headers (kernels, op helpers, JSON validation) stay out.
foreach(dir ${TAPEGRAD_DIRS})
  install(DIRECTORY ${dir}/ DESTINATION include/tapegrad/${dir} COMPONENT dev FILES_MATCHING PATTERN "*.h"
    PATTERN "blas.h" EXCLUDE PATTERN "gemm.h" EXCLUDE PATTERN "vmath.h" EXCLUDE
    PATTERN "internal.h" EXCLUDE PATTERN "conv_geom.h" EXCLUDE PATTERN "json.h" EXCLUDE PATTERN "elements.h" EXCLUDE PATTERN "named.h" EXCLUDE
    PATTERN "spin.h" EXCLUDE PATTERN "openblas.h" EXCLUDE
    PATTERN "gemm_half.h" EXCLUDE PATTERN "half.h" EXCLUDE PATTERN "bf16_emu.h" EXCLUDE PATTERN "bf16_pack.h" EXCLUDE PATTERN "peak.h" EXCLUDE)
endforeach()
install(FILES dist/dist.h DESTINATION include/tapegrad/dist COMPONENT distdev)

# CMake package: find_package(tapegrad) gives tapegrad::tapegrad;
# find_package(tapegrad COMPONENTS dist) adds tapegrad::dist (and MPI).
install(EXPORT tapegradTargets NAMESPACE tapegrad:: DESTINATION ${TAPEGRAD_CMAKE_DIR} COMPONENT dev)
install(EXPORT tapegradDistTargets NAMESPACE tapegrad:: DESTINATION ${TAPEGRAD_CMAKE_DIR} COMPONENT distdev)
if(BUILD_SHARED_LIBS)
  set(TAPEGRAD_STATIC OFF)
else()
  set(TAPEGRAD_STATIC ON)
endif()
configure_package_config_file(cmake/tapegradConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tapegradConfig.cmake
  INSTALL_DESTINATION ${TAPEGRAD_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tapegradConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tapegradConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/tapegradConfigVersion.cmake
  DESTINATION ${TAPEGRAD_CMAKE_DIR} COMPONENT dev)

# pkg-config: tapegrad.pc and tapegrad-dist.pc. A static library needs its
# dependencies on the link line of every program: the plain `pkg-config
# --libs` must list them, not only `--static`. A shared one carries them.
set(deps_public "openblas")
set(deps "libcjson stb")
set(libs "-lm -pthread")
set(dist_deps "")
set(dist_libs "")
if(TAPEGRAD_WITH_MPI)
  # MPI's own .pc (Open MPI's ompi-c, MPICH's mpich, Debian's mpi), else its libraries
  pkg_search_module(TAPEGRAD_MPI_PC QUIET ompi-c mpich mpi)
  if(TAPEGRAD_MPI_PC_FOUND)
    set(dist_deps ${TAPEGRAD_MPI_PC_MODULE_NAME})
  else()
    list(JOIN MPI_C_LIBRARIES " " dist_libs)
  endif()
endif()
if(BUILD_SHARED_LIBS)
  set(PC_REQUIRES "${deps_public}")
  set(PC_REQUIRES_PRIVATE "${deps}")
  set(PC_LIBS "")
  set(PC_LIBS_PRIVATE "${libs}")
  set(PC_DIST_REQUIRES "tapegrad = ${PROJECT_VERSION}")
  set(PC_DIST_REQUIRES_PRIVATE "${dist_deps}")
  set(PC_DIST_LIBS "")
  set(PC_DIST_LIBS_PRIVATE "${dist_libs}")
else()
  set(PC_REQUIRES "${deps_public} ${deps}")
  set(PC_REQUIRES_PRIVATE "")
  set(PC_LIBS "${libs}")
  set(PC_LIBS_PRIVATE "")
  set(PC_DIST_REQUIRES "tapegrad = ${PROJECT_VERSION} ${dist_deps}")
  set(PC_DIST_REQUIRES_PRIVATE "")
  set(PC_DIST_LIBS "${dist_libs}")
  set(PC_DIST_LIBS_PRIVATE "")
endif()
# relocatable: the prefix is found relative to the .pc file itself
string(REGEX REPLACE "[^/]+" ".." PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
# Shared: each .pc exists twice, with and without `-Wl,-rpath,${libdir}`;
# the install picks by where it really installs (`cmake --install --prefix`
# decides that, not the configure): the rpath only outside the loader's
# directories, so a program built with the pkg-config line runs as it is.
foreach(rpath IN ITEMS "" "-Wl,-rpath,\${libdir}")
  set(PC_RPATH "${rpath}")
  if(rpath)
    set(pc_dir ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig-rpath)
  else()
    set(pc_dir ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig)
  endif()
  configure_file(cmake/tapegrad.pc.in ${pc_dir}/tapegrad.pc @ONLY)
  configure_file(cmake/tapegrad-dist.pc.in ${pc_dir}/tapegrad-dist.pc @ONLY)
endforeach()
foreach(pc_component IN ITEMS "tapegrad;dev" "tapegrad-dist;distdev")
  list(GET pc_component 0 pc)
  list(GET pc_component 1 component)
  if(BUILD_SHARED_LIBS)
    install(CODE "
      set(system_libdirs \"${TAPEGRAD_SYSTEM_LIBDIRS}\")
      get_filename_component(libdir \"${CMAKE_INSTALL_LIBDIR}\" ABSOLUTE BASE_DIR \"\${CMAKE_INSTALL_PREFIX}\")
      set(pc_dir \"${CMAKE_CURRENT_BINARY_DIR}/pkgconfig-rpath\")
      list(FIND system_libdirs \"\${libdir}\" system)
      if(system GREATER -1)
        set(pc_dir \"${CMAKE_CURRENT_BINARY_DIR}/pkgconfig\")
      endif()
      file(INSTALL \"\${pc_dir}/${pc}.pc\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")"
      COMPONENT ${component})
  else()
    install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
      COMPONENT ${component})
  endif()
endforeach()

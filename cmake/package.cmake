# Debian packages: `cpack -G DEB` in a build configured with
#   -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON -DTAPEGRAD_INSTALL_STATIC=ON
# (scripts/test-deb.sh does it, then installs them in a clean Debian root).
# One package per install component (cmake/install.cmake):
#   libtapegrad0        lib      libtapegrad.so.0
#   libtapegrad-dev     dev      headers, libtapegrad.{a,so}, tapegrad.pc, the CMake package
#   libtapegrad-dist0   dist     libtapegrad-dist.so.0 (MPI when the build had it)
#   libtapegrad-dist-dev distdev dist/dist.h, libtapegrad-dist.{a,so}, tapegrad-dist.pc
#   tapegrad            bin      seqtask
# so that a user of the library alone never installs MPI. The shared
# libraries' and seqtask's Depends come from dpkg-shlibdeps; the -dev ones
# name the -dev packages their headers and .pc files need.
set(CPACK_PACKAGE_NAME tapegrad)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "a small tape-based reverse-mode autograd framework in C11")
set(CPACK_PACKAGE_CONTACT "tapegrad maintainers <tapegrad@localhost>")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev dist distdev)
if(TARGET seqtask)
  list(APPEND CPACK_COMPONENTS_ALL bin)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# dpkg-shlibdeps finds the libraries the packages themselves hold here
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # CPACK_COMPONENT_*_DEPENDS -> "pkg (= version)"

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libtapegrad0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_DIST_PACKAGE_NAME libtapegrad-dist0)
set(CPACK_DEBIAN_DIST_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_DIST_DEPENDS lib)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtapegrad-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libopenblas-dev, libcjson-dev, libstb-dev, pkg-config")
set(CPACK_DEBIAN_DISTDEV_PACKAGE_NAME libtapegrad-dist-dev)
set(CPACK_DEBIAN_DISTDEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DISTDEV_DEPENDS dev dist)
if(TAPEGRAD_WITH_MPI)
  set(CPACK_DEBIAN_DISTDEV_PACKAGE_DEPENDS "libopenmpi-dev | mpi-default-dev")
endif()
set(CPACK_DEBIAN_BIN_PACKAGE_NAME tapegrad)
set(CPACK_DEBIAN_BIN_PACKAGE_SECTION science)
set(CPACK_COMPONENT_BIN_DEPENDS lib dist)
if(TAPEGRAD_WITH_MPI)
  set(CPACK_DEBIAN_BIN_PACKAGE_RECOMMENDS "openmpi-bin")  # mpirun
endif()
include(CPack)

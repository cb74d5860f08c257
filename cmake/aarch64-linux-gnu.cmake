# Cross-compiles for aarch64 with Debian's gcc-aarch64-linux-gnu against an
# arm64 root file system (scripts/test-aarch64.sh makes one with debootstrap)
# and runs the tests under qemu-user. Usage:
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTAPEGRAD_SYSROOT=/path/to/arm64-root ...
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
if(NOT TAPEGRAD_SYSROOT)
  message(FATAL_ERROR "set TAPEGRAD_SYSROOT to an arm64 root file system")
endif()
set(CMAKE_SYSROOT ${TAPEGRAD_SYSROOT})
# try_compile projects see the sysroot too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TAPEGRAD_SYSROOT)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the root's .pc files and prefixes their paths with it
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${TAPEGRAD_SYSROOT})
set(ENV{PKG_CONFIG_LIBDIR} "${TAPEGRAD_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${TAPEGRAD_SYSROOT}/usr/share/pkgconfig")
# ctest runs every test binary through qemu with the root's loader and libraries
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L ${TAPEGRAD_SYSROOT})

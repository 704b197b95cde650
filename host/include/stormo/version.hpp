#pragma once
// SDK version and the compiler identity. Bump STORMO_SDK_MAJOR for any change to a virtual
// interface; struct layouts are hashed into the ABI string on their own (stormo/abi.hpp).
#define STORMO_STRINGIFY_(x) #x
#define STORMO_STRINGIFY(x) STORMO_STRINGIFY_(x)

#define STORMO_SDK_MAJOR 9
#define STORMO_SDK_MINOR 3

#if defined(__clang__)
#define STORMO_COMPILER_ID "clang-" STORMO_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define STORMO_COMPILER_ID "gcc-" STORMO_STRINGIFY(__GNUC__)
#else
#define STORMO_COMPILER_ID "unknown"
#endif

#if defined(_GLIBCXX_RELEASE)
#define STORMO_STDLIB_ID "libstdc++-" STORMO_STRINGIFY(_GLIBCXX_RELEASE) "-cxx11abi" STORMO_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#elif defined(_LIBCPP_VERSION)
#define STORMO_STDLIB_ID "libc++-" STORMO_STRINGIFY(_LIBCPP_VERSION)
#else
#define STORMO_STDLIB_ID "unknown"
#endif

namespace stormo {
inline constexpr const char* kSdkVersion = STORMO_STRINGIFY(STORMO_SDK_MAJOR) "." STORMO_STRINGIFY(STORMO_SDK_MINOR);
}  // namespace stormo

# Debug-build ISA check (included from tests/CMakeLists.txt). The ISA files are compiled once
# more at -O0, as a Debug build compiles them, with each flavour's flags, and a test checks that
# none of these objects defines a weak (COMDAT) symbol. A weak symbol in an ISA object is an
# inline or template function built with wide instructions that the linker may pick for baseline
# code too (the entry points discovery runs on any CPU); optimised builds usually inline them
# away, which is why the check runs on -O0 objects, in every build type.
set(STORMO_ISA_DIR ${PROJECT_SOURCE_DIR}/plugins/kernels_avx2/isa)
set(STORMO_VNNI_DIR ${PROJECT_SOURCE_DIR}/plugins/kernels_vnni)
file(GLOB STORMO_DEBUG_AVX2_SOURCES CONFIGURE_DEPENDS ${STORMO_ISA_DIR}/*.cpp)
file(GLOB STORMO_DEBUG_AVX_VNNI_SOURCES CONFIGURE_DEPENDS ${STORMO_VNNI_DIR}/isa_avx_vnni/*.cpp)
file(GLOB STORMO_DEBUG_AVX512_VNNI_SOURCES CONFIGURE_DEPENDS ${STORMO_VNNI_DIR}/isa_avx512_vnni/*.cpp)
file(GLOB STORMO_DEBUG_AVX512_FLOAT_SOURCES CONFIGURE_DEPENDS ${STORMO_VNNI_DIR}/isa_avx512_float/*.cpp)
file(GLOB STORMO_DEBUG_AVX512_BF16_SOURCES CONFIGURE_DEPENDS ${STORMO_VNNI_DIR}/isa_avx512_bf16/*.cpp)

function(stormo_isa_debug_objects target flags)
  add_library(${target} OBJECT ${ARGN})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/host/include ${STORMO_VNNI_DIR}
    ${PROJECT_SOURCE_DIR}/plugins/kernels_avx2 ${STORMO_ISA_DIR})
  # Last -O wins: -O0 as in a Debug build, whatever CMAKE_BUILD_TYPE is; -g0 keeps them small.
  target_compile_options(${target} PRIVATE ${flags} -O0 -g0)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
stormo_isa_debug_objects(stormo-isa-debug-avx2 "${STORMO_AVX2_FLAGS};-ffp-contract=off" ${STORMO_DEBUG_AVX2_SOURCES})
stormo_isa_debug_objects(stormo-isa-debug-avx-vnni "${STORMO_VNNI_FLAGS}" ${STORMO_DEBUG_AVX_VNNI_SOURCES})
stormo_isa_debug_objects(stormo-isa-debug-avx512-vnni "${STORMO_AVX512_VNNI_FLAGS}" ${STORMO_DEBUG_AVX512_VNNI_SOURCES})
stormo_isa_debug_objects(stormo-isa-debug-avx512-float "${STORMO_AVX512_FLOAT_FLAGS}" ${STORMO_DEBUG_AVX512_FLOAT_SOURCES})
stormo_isa_debug_objects(stormo-isa-debug-avx512-bf16 "${STORMO_AVX512_BF16_FLAGS}" ${STORMO_DEBUG_AVX512_BF16_SOURCES})

set(STORMO_ISA_DEBUG_LIST ${CMAKE_CURRENT_BINARY_DIR}/isa-debug-objects.txt)
file(GENERATE OUTPUT ${STORMO_ISA_DEBUG_LIST} CONTENT
  "$<JOIN:$<TARGET_OBJECTS:stormo-isa-debug-avx2>;$<TARGET_OBJECTS:stormo-isa-debug-avx-vnni>;$<TARGET_OBJECTS:stormo-isa-debug-avx512-vnni>;$<TARGET_OBJECTS:stormo-isa-debug-avx512-float>;$<TARGET_OBJECTS:stormo-isa-debug-avx512-bf16>,\n>\n")
add_test(NAME IsaKernelsBuild.DebugObjectsDefineNoWeakSymbols
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIST=${STORMO_ISA_DEBUG_LIST}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/isa_weak_symbols.cmake)
set_tests_properties(IsaKernelsBuild.DebugObjectsDefineNoWeakSymbols PROPERTIES TIMEOUT 60)

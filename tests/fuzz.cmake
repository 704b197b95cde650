# The libFuzzer harnesses (tests/fuzz, docs/fuzzing.md), included from tests/CMakeLists.txt: built
# with clang as a project of their own when clang with libFuzzer is found, each run for a few
# seconds as a ctest test. scripts/fuzz.sh runs them for longer.
find_program(STORMO_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
set(STORMO_FUZZ_OK OFF)
if(STORMO_CLANGXX)
  # libFuzzer is a separate runtime in some installations: check that a harness links.
  set(probe ${CMAKE_CURRENT_BINARY_DIR}/fuzz-probe.cpp)
  file(WRITE ${probe} "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${STORMO_CLANGXX} -fsanitize=fuzzer,address,undefined ${probe} -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz-probe
                  RESULT_VARIABLE probe_status OUTPUT_QUIET ERROR_QUIET)
  if(probe_status EQUAL 0)
    set(STORMO_FUZZ_OK ON)
  endif()
endif()
if(NOT STORMO_FUZZ_OK)
  message(STATUS "fuzzing: clang++ with libFuzzer not found; the fuzz.* tests are not defined")
  return()
endif()
message(STATUS "fuzzing: libFuzzer harnesses built with ${STORMO_CLANGXX}")

include(ExternalProject)
set(STORMO_FUZZ_BUILD ${PROJECT_BINARY_DIR}/fuzz)
set(STORMO_FUZZ_HARNESSES safetensors_header safetensors_index model_config engine_config token_ids route_trace gguf_header
    tokenizer_json chat_template container_manifest)
set(byproducts "")
foreach(h IN LISTS STORMO_FUZZ_HARNESSES)
  list(APPEND byproducts ${STORMO_FUZZ_BUILD}/fuzz_${h})
endforeach()
ExternalProject_Add(stormo-fuzzers
  SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz
  BINARY_DIR ${STORMO_FUZZ_BUILD}
  CMAKE_ARGS -DCMAKE_CXX_COMPILER=${STORMO_CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${byproducts}
  INSTALL_COMMAND "")
# A few seconds each: enough to replay the seeds and the corpus grown by earlier runs, and to
# catch a regression in what the seeds reach; longer runs are scripts/fuzz.sh's job.
foreach(h IN LISTS STORMO_FUZZ_HARNESSES)
  add_test(NAME fuzz.${h}
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run.sh ${STORMO_FUZZ_BUILD}/fuzz_${h} ${h} 3
            ${PROJECT_SOURCE_DIR} ${STORMO_FUZZ_BUILD}/runs)
  set_tests_properties(fuzz.${h} PROPERTIES TIMEOUT 60 LABELS fuzz)
endforeach()

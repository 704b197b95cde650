# Links tests/sealed_sdk/reaches_the_host.cpp twice as a shared library with --no-undefined:
# against the SDK library alone it must fail naming the host's symbols; against the host library
# it must succeed (the control: the symbols exist, and the flags and sources are fine).
# Arguments: CXX, SOURCE, INCLUDE, SDK_LIB, CORE_LIB, OUT_DIR.
file(MAKE_DIRECTORY ${OUT_DIR})
set(common ${CXX} -std=c++23 -fPIC -shared -I${INCLUDE} ${SOURCE} -Wl,--no-undefined)
execute_process(COMMAND ${common} -o ${OUT_DIR}/sealed.so ${SDK_LIB}
                RESULT_VARIABLE sealed_rc OUTPUT_VARIABLE sealed_out ERROR_VARIABLE sealed_err)
if(sealed_rc EQUAL 0)
  message(FATAL_ERROR "a plugin linked against the SDK alone reached the host")
endif()
foreach(symbol "stormo::Engine::open" "stormo::open_model_directory" "stormo::make_resident_expert_store")
  string(FIND "${sealed_err}" "undefined reference to `${symbol}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the link failed, but not on ${symbol}:\n${sealed_err}")
  endif()
endforeach()
execute_process(COMMAND ${common} -o ${OUT_DIR}/control.so ${CORE_LIB} ${SDK_LIB}
                RESULT_VARIABLE control_rc ERROR_VARIABLE control_err)
if(NOT control_rc EQUAL 0)
  message(FATAL_ERROR "the control link against the host library failed:\n${control_err}")
endif()
message(STATUS "sealed: against the SDK alone the engine, the model reader and the store stay undefined")

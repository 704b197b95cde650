# cmake -DNM=nm -DLIST=file -P isa_weak_symbols.cmake: fails when an object named in LIST (one path
# a line) defines a weak or unique symbol (nm: W, V, u), i.e. a COMDAT copy the linker could hand
# to other code. DW.ref.__gxx_personality_v0 (a data pointer for exception tables, no code) is
# allowed. See tests/isa_debug.cmake for why.
file(STRINGS ${LIST} objects)
list(LENGTH objects count)
if(count EQUAL 0)
  message(FATAL_ERROR "no objects listed in ${LIST}")
endif()
set(found "")
foreach(object IN LISTS objects)
  if(NOT EXISTS ${object})
    message(FATAL_ERROR "${object} was not built")
  endif()
  execute_process(COMMAND ${NM} -C --defined-only ${object} OUTPUT_VARIABLE symbols RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-f]* [WVu] (.*)$" AND NOT CMAKE_MATCH_1 MATCHES "^DW\\.ref\\.")
      string(APPEND found "\n  ${object}: ${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "ISA objects define weak symbols, built with wide instructions, that the linker may "
                      "choose for baseline code (use plugins/kernels_avx2/isa/scratch.hpp, plain loops, "
                      "internal linkage):${found}")
endif()
message(STATUS "${count} ISA objects at -O0: no weak symbols")

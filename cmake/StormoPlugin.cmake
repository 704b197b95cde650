# stormo_add_plugin(<target> KIND model|kernels NAME <name> SOURCES ...)
# Builds libstormo-<kind>-<name>.so into the plugin directory, linked against the SDK library
# only (and, for a model family, the family toolkit), with every undefined symbol an error at link
# time (not a failure at dlopen): a plugin cannot reach the host's engine, registry or store.
function(stormo_add_plugin target)
  cmake_parse_arguments(P "" "KIND;NAME" "SOURCES" ${ARGN})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE stormo::sdk)
  if(P_KIND STREQUAL "model")
    target_link_libraries(${target} PRIVATE stormo::family_toolkit)
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "stormo-${P_KIND}-${P_NAME}"
    LIBRARY_OUTPUT_DIRECTORY ${STORMO_PLUGIN_OUTPUT_DIR}
    INSTALL_RPATH "$ORIGIN/../.."
    BUILD_RPATH "$ORIGIN/../..")
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  install(TARGETS ${target} LIBRARY DESTINATION ${STORMO_PLUGIN_SUBDIR})
endfunction()

# stormo serve driven by the official OpenAI client (tests/serve/*.test.mjs, node:test), and its
# chat page in Debian's headless Chromium through puppeteer-core. A fixture installs the pinned
# packages from package-lock.json into the build tree with `npm ci` (network to the npm registry,
# which CI has); the source tree gets no node_modules.
find_program(STORMO_NODE node)
find_program(STORMO_NPM npm)
find_program(STORMO_CHROMIUM NAMES chromium chromium-browser)
if(NOT STORMO_NODE OR NOT STORMO_NPM)
  message(STATUS "stormo: node or npm not found; the serve tests driven by the OpenAI client are not registered")
  return()
endif()
set(STORMO_SERVE_SUITES chat errors concurrency lifecycle limits batching prompt_cache structured logprobs api_surface)
if(STORMO_CHROMIUM)
  list(APPEND STORMO_SERVE_SUITES chat_page)
else()
  message(STATUS "stormo: chromium not found; the chat page's browser test is not registered (scripts/install-deps.sh installs it)")
endif()
set(STORMO_SERVE_NODE_DIR ${PROJECT_BINARY_DIR}/serve-node)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/serve/package.json ${STORMO_SERVE_NODE_DIR}/package.json COPYONLY)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/serve/package-lock.json ${STORMO_SERVE_NODE_DIR}/package-lock.json COPYONLY)
add_test(NAME serve.NpmCi
  COMMAND ${STORMO_NPM} ci --prefix ${STORMO_SERVE_NODE_DIR} --no-audit --no-fund --loglevel=error)
set_tests_properties(serve.NpmCi PROPERTIES FIXTURES_SETUP serve_node TIMEOUT 300 LABELS serve)
foreach(suite ${STORMO_SERVE_SUITES})
  add_test(NAME serve.${suite}
    COMMAND ${STORMO_NODE} --test --test-reporter=spec ${CMAKE_CURRENT_SOURCE_DIR}/serve/${suite}.test.mjs)
  set_tests_properties(serve.${suite} PROPERTIES
    FIXTURES_REQUIRED serve_node TIMEOUT 120 LABELS serve
    ENVIRONMENT "STORMO_CLI=$<TARGET_FILE:stormo>;STORMO_DEMO_MODEL=${PROJECT_SOURCE_DIR}/models/gpt-oss-demo;STORMO_STRUCTURED_MODEL=${STORMO_STRUCTURED_MODEL};STORMO_NODE_MODULES=${STORMO_SERVE_NODE_DIR}/node_modules;STORMO_SCREENSHOT_DIR=${PROJECT_BINARY_DIR};CHROMIUM=${STORMO_CHROMIUM};STORMO_PLUGIN_PATH=")
endforeach()

# The chat page of stormo serve in Debian's headless Chromium (tests/page/chat_page.test.mjs),
# driven by puppeteer-core (which downloads no browser), installed like the serve tests' client:
# `npm ci` from the committed package-lock.json into the build tree.
find_program(STORMO_NODE node)
find_program(STORMO_NPM npm)
find_program(STORMO_CHROMIUM NAMES chromium chromium-browser)
if(NOT STORMO_NODE OR NOT STORMO_NPM OR NOT STORMO_CHROMIUM)
  message(STATUS "stormo: node, npm or chromium not found; the chat page test is not registered (scripts/install-deps.sh installs them)")
  return()
endif()
set(STORMO_PAGE_NODE_DIR ${PROJECT_BINARY_DIR}/page-node)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/page/package.json ${STORMO_PAGE_NODE_DIR}/package.json COPYONLY)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/page/package-lock.json ${STORMO_PAGE_NODE_DIR}/package-lock.json COPYONLY)
add_test(NAME page.NpmCi
  COMMAND ${STORMO_NPM} ci --prefix ${STORMO_PAGE_NODE_DIR} --no-audit --no-fund --loglevel=error)
set_tests_properties(page.NpmCi PROPERTIES FIXTURES_SETUP page_node TIMEOUT 300 LABELS serve)
add_test(NAME page.chat
  COMMAND ${STORMO_NODE} --test --test-reporter=spec ${CMAKE_CURRENT_SOURCE_DIR}/page/chat_page.test.mjs)
set_tests_properties(page.chat PROPERTIES
  FIXTURES_REQUIRED page_node TIMEOUT 180 LABELS serve
  ENVIRONMENT "STORMO_CLI=$<TARGET_FILE:stormo>;STORMO_MODEL=${PROJECT_SOURCE_DIR}/models/gpt-oss-demo;STORMO_PAGE_NODE_DIR=${STORMO_PAGE_NODE_DIR};STORMO_SCREENSHOT_DIR=${PROJECT_BINARY_DIR};CHROMIUM=${STORMO_CHROMIUM};STORMO_PLUGIN_PATH=")

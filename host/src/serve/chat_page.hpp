#pragma once
// The chat page `stormo serve` answers on GET /: one self-contained HTML file (chat_page.html, no
// external assets, no build step of its own) compiled into the binary so the server needs nothing
// beside itself.
#include <string_view>

namespace stormo::serve {

std::string_view chat_page_html();

}  // namespace stormo::serve

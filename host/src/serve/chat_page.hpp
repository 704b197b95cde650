#pragma once
// GET /: the chat page, one self-contained HTML file. The page itself lands separately; until it
// does this returns nothing and GET / answers 404.
#include <optional>
#include <string_view>

namespace stormo::serve {

std::optional<std::string_view> chat_page();

}  // namespace stormo::serve

#include "serve/chat_page.hpp"

namespace stormo::serve {

// The page is written separately (one HTML file with no external assets); the route already
// serves whatever this returns, so adding the page changes only this function.
std::optional<std::string_view> chat_page() { return std::nullopt; }

}  // namespace stormo::serve

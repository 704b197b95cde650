#pragma once
// The icon `stormo serve` answers on GET /favicon.ico (an SVG, which browsers take for an icon
// by its content type) and the chat page links.
#include <string_view>

namespace stormo::serve {

std::string_view favicon_svg();

}  // namespace stormo::serve

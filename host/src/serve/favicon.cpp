#include "serve/favicon.hpp"

namespace stormo::serve {

std::string_view favicon_svg() {
    // A lightning bolt on a round blue field, legible at 16 pixels.
    return R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">)"
           R"(<circle cx="16" cy="16" r="15" fill="#3a7bd5"/>)"
           R"(<path d="M18 4 8 18h7l-2 10 11-15h-7z" fill="#fff"/>)"
           R"(</svg>)";
}

}  // namespace stormo::serve

#include "serve/sse.hpp"

namespace stormo::serve {

std::string sse_event(std::string_view json) {
    std::string event;
    event.reserve(json.size() + 8);
    event += "data: ";
    event += json;
    event += "\n\n";
    return event;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace stormo::serve

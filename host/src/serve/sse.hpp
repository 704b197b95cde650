#pragma once
// Server-sent events as OpenAI streams them: one "data: <json>\n\n" event per chunk, and
// "data: [DONE]\n\n" at the end.
#include <string>
#include <string_view>

namespace stormo::serve {

// One event carrying `json` (which is one line: JSON text never holds a raw newline).
std::string sse_event(std::string_view json);
// The last event of a stream.
std::string sse_done();

}  // namespace stormo::serve

#pragma once
// Walks a parsed template over the render's variables and writes the prompt. Scoping follows
// Jinja2: a for loop's body and a macro's body get their own scope (a `set` there does not leave
// it, which is why templates carry state out of loops in namespace() objects), an if does not.
#include <optional>
#include <string>

#include "jinja/chat_value.hpp"
#include "jinja/jinja_ast.hpp"
#include "jinja/render_limits.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja {

struct RenderContext {
    const std::string& source;                 // names the template in errors
    const ValueObject& variables;              // the template's variables
    std::optional<std::string> strftime_text;  // what strftime_now() returns; else the local time
    RenderLimits limits;
};

Expected<std::string> render_nodes(const NodeList& nodes, const RenderContext& context);

}  // namespace stormo::text::jinja

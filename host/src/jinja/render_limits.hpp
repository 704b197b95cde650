#pragma once
// Bounds on a runaway chat template; exceeding one is an ErrorKind::resource error naming the
// template line, never a hang or an exhausted stack.
#include <cstddef>
#include <cstdint>

namespace stormo::text {

struct RenderLimits {
    // Everything written, macro results included; also the most any one string or value a
    // template builds may hold (Value::weight), checked before a string is built.
    size_t max_output_bytes = size_t{16} << 20;
    int max_macro_depth = 100;        // nested macro calls (recursion)
    uint64_t max_steps = 20'000'000;  // statements, loop iterations, list items built and bytes of text built (per 8)
    int max_nesting = 500;            // statements and expressions open at once (~1.5 KiB of stack each)
    // Lists and dicts nested in one value: printing, tojson, comparing and freeing one recurse
    // once per level. Python stops near 1000 too (its recursion limit); JSON input is cut at 512.
    int max_value_depth = 1000;
};

}  // namespace stormo::text

#pragma once
// Bounds on a runaway chat template; exceeding one is an ErrorKind::resource error naming the
// template line, never a hang or an exhausted stack.
#include <cstddef>
#include <cstdint>

namespace stormo::text {

struct RenderLimits {
    size_t max_output_bytes = size_t{16} << 20;  // everything written, macro results included
    int max_macro_depth = 100;                   // nested macro calls (recursion)
    uint64_t max_steps = 20'000'000;             // statements, loop iterations and items copied (per 8)
    int max_nesting = 500;                       // statements and expressions open at once (~1.5 KiB of stack each)
};

}  // namespace stormo::text

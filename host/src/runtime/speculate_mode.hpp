#pragma once
// The speculation modes a run or a request chooses (docs/speculation.md).
#include <cstdint>
#include <optional>
#include <string_view>

#include "stormo/export.hpp"

namespace stormo {

enum class SpeculateMode : uint8_t {
    off,        // plain decoding
    automatic,  // "auto": the grammar's forced tokens where there are some, else the context; the gate picks k
    context,    // prompt lookup: every draft it finds is verified
    grammar,    // the constraint's forced tokens only
    mtp,        // the model's multi-token-prediction head: not built yet (an error naming the model)
};

STORMO_API const char* speculate_mode_name(SpeculateMode mode);
// "auto", "off", "context", "mtp", "grammar"; nullopt for anything else.
STORMO_API std::optional<SpeculateMode> speculate_mode_from_name(std::string_view name);

}  // namespace stormo

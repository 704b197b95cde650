#pragma once
// Token ids as users write them (--ids, --ids-file): non-negative integers separated by commas or
// whitespace. Kept apart from the CLI so the fuzzing harness reaches exactly what the CLI runs.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// Each id in [0, 2^31), separated by commas or whitespace; none at all is an error unless
// allow_empty (detokenizing nothing is the empty text). A comma stands between two ids: "1,,2",
// ",1" and "1," are refused, naming the empty id's number and the commas' bytes. `origin` names the input ("--ids") in
// errors, which quote the offending text escaped (stormo/quote.hpp).
STORMO_API Expected<std::vector<int32_t>> parse_token_ids(std::string_view text, const std::string& origin,
                                                          bool allow_empty = false);

}  // namespace stormo

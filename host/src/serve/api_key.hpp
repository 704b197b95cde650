#pragma once
// --api-key: every route but /health needs "Authorization: Bearer KEY". The key is compared in
// constant time, so the time a refusal takes says nothing about how much of a guess was right.
#include <string_view>

namespace stormo::serve {

// true when a and b are equal; the time depends only on their lengths, not on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

// Whether an Authorization header value carries `key` as a bearer token ("Bearer KEY").
bool bearer_matches(std::string_view authorization, std::string_view key);

}  // namespace stormo::serve

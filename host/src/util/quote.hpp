#pragma once
// The host's quoting of names in errors is the SDK's (stormo/quote.hpp), so a family's GGUF
// mapping words its errors as the host does.
#include "stormo/quote.hpp"

#pragma once
// Numbers in messages as a person writes them: "2", "0.7", "1e-05", never "2.000000".
#include <string>

#include "stormo/export.hpp"

namespace stormo {

// The shortest text that reads back as `value` ("3", "0.95", "-1.5", "inf", "nan").
STORMO_API std::string format_number(double value);
// The same for a float: "0.7" for 0.7f, not the double's "0.699999988079071".
STORMO_API std::string format_number(float value);

}  // namespace stormo

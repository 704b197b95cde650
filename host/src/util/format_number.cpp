#include "util/format_number.hpp"

#include <charconv>

namespace stormo {
namespace {

template <typename T>
std::string shortest(T value) {
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace

std::string format_number(double value) { return shortest(value); }
std::string format_number(float value) { return shortest(value); }

}  // namespace stormo

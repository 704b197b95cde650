#include "constrain/utf8_ranges.hpp"

#include <algorithm>
#include <string>

#include "util/utf8.hpp"

namespace stormo::constrain {
namespace {

constexpr char32_t kMaxScalar = 0x10FFFF;
constexpr char32_t kSurrogateFirst = 0xD800;
constexpr char32_t kSurrogateLast = 0xDFFF;

size_t encoded_length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// A range of one encoded length whose bytes can vary independently: split until each
// continuation byte covers its whole 0x80..0xBF span wherever a lead byte changes (the method of
// Rust's utf8-ranges).
void split(char32_t first, char32_t last, std::vector<ByteRangeSequence>& out) {
    for (char32_t boundary : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}})
        if (first <= boundary && last > boundary) {
            split(first, boundary, out);
            split(boundary + 1, last, out);
            return;
        }
    const size_t n = encoded_length(first);
    for (size_t i = 1; i < n; ++i) {
        const char32_t mask = (char32_t{1} << (6 * i)) - 1;
        if ((first & ~mask) != (last & ~mask)) {
            if ((first & mask) != 0) {
                split(first, first | mask, out);
                split((first | mask) + 1, last, out);
                return;
            }
            if ((last & mask) != mask) {
                split(first, (last & ~mask) - 1, out);
                split(last & ~mask, last, out);
                return;
            }
        }
    }
    std::string a, b;
    text::utf8::append(a, first);
    text::utf8::append(b, last);
    ByteRangeSequence sequence;
    for (size_t i = 0; i < a.size(); ++i) sequence.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
    out.push_back(std::move(sequence));
}

std::vector<CodePointRange> normalised(std::vector<CodePointRange> ranges) {
    std::vector<CodePointRange> out;
    for (CodePointRange r : ranges) {
        r.last = std::min(r.last, kMaxScalar);
        if (r.first > r.last) continue;
        // Surrogates are not scalar values: cut them out.
        if (r.first < kSurrogateFirst && r.last > kSurrogateLast) {
            out.push_back({r.first, kSurrogateFirst - 1});
            out.push_back({kSurrogateLast + 1, r.last});
        } else if (r.first >= kSurrogateFirst && r.last <= kSurrogateLast) {
            continue;
        } else if (r.first >= kSurrogateFirst && r.first <= kSurrogateLast) {
            out.push_back({kSurrogateLast + 1, r.last});
        } else if (r.last >= kSurrogateFirst && r.last <= kSurrogateLast) {
            out.push_back({r.first, kSurrogateFirst - 1});
        } else {
            out.push_back(r);
        }
    }
    std::sort(out.begin(), out.end(), [](auto a, auto b) { return a.first < b.first; });
    std::vector<CodePointRange> merged;
    for (CodePointRange r : out) {
        if (!merged.empty() && r.first <= merged.back().last + 1) merged.back().last = std::max(merged.back().last, r.last);
        else merged.push_back(r);
    }
    return merged;
}

}  // namespace

std::vector<ByteRangeSequence> utf8_sequences(const std::vector<CodePointRange>& ranges) {
    std::vector<ByteRangeSequence> out;
    for (CodePointRange r : normalised(ranges)) split(r.first, r.last, out);
    return out;
}

std::vector<CodePointRange> complement(std::vector<CodePointRange> ranges) {
    std::vector<CodePointRange> out;
    char32_t next = 0;
    for (CodePointRange r : normalised(std::move(ranges))) {
        if (r.first > next) out.push_back({next, r.first - 1});
        next = r.last + 1;
    }
    if (next <= kMaxScalar) out.push_back({next, kMaxScalar});
    return normalised(std::move(out));
}

}  // namespace stormo::constrain

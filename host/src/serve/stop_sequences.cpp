#include "serve/stop_sequences.hpp"

#include <algorithm>

namespace stormo::serve {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

namespace {

// The length of the longest suffix of `text` that is a proper prefix of some stop sequence.
size_t held_tail(std::string_view text, const std::vector<std::string>& stops) {
    size_t longest = 0;
    for (const std::string& stop : stops) {
        const size_t max_len = std::min(text.size(), stop.size() - 1);
        for (size_t len = max_len; len > longest; --len)
            if (text.substr(text.size() - len) == std::string_view(stop).substr(0, len)) {
                longest = len;
                break;
            }
    }
    return longest;
}

}  // namespace

StopMatcher::Result StopMatcher::push(std::string_view text) {
    Result result;
    if (matched_) return result;
    pending_ += text;
    size_t first = std::string::npos;
    for (const std::string& stop : stops_) first = std::min(first, pending_.find(stop));
    if (first != std::string::npos) {
        result.text = pending_.substr(0, first);
        result.matched = matched_ = true;
        pending_.clear();
        return result;
    }
    const size_t keep = held_tail(pending_, stops_);
    result.text = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return result;
}

std::string StopMatcher::flush() {
    std::string rest;
    if (!matched_) rest.swap(pending_);
    return rest;
}

}  // namespace stormo::serve

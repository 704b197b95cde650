#pragma once
// Stop sequences on decoded text: the text is passed on as it comes, except a tail that could
// still grow into a stop sequence, which is held back until it either does (the match and
// everything after it are dropped) or cannot any more.
#include <string>
#include <string_view>
#include <vector>

namespace stormo::serve {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops);

    struct Result {
        std::string text;      // safe to send: no stop sequence in it or starting in it
        bool matched = false;  // a stop sequence completed; nothing more should be sent
    };
    // The next piece of decoded text. After a match every later push returns nothing.
    Result push(std::string_view text);
    // The text held back at the end of generation (it never became a stop sequence).
    std::string flush();
    bool matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string pending_;
    bool matched_ = false;
};

}  // namespace stormo::serve

#pragma once
// Drafts replayed from a recorded continuation (the model's own plain output), each draft
// position right with probability `acceptance` and otherwise a wrong token, from a seeded
// generator: the cost side of speculation measured at a stated acceptance (`bench
// --draft-replay-acceptance P`) and the tests' mix of right and wrong drafts. Not for serving:
// it knows the answer.
#include <random>

#include "runtime/draft_source.hpp"

namespace stormo {

class ReplayDraftSource final : public DraftSource {
public:
    // recorded: the tokens plain decoding generates for the request; vocab: the model's (a wrong
    // draft is another id inside it).
    ReplayDraftSource(std::vector<int32_t> recorded, double acceptance, uint64_t seed, size_t vocab)
        : recorded_(std::move(recorded)), acceptance_(acceptance), rng_(seed), vocab_(vocab) {}
    std::string_view name() const override { return "replay"; }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override;

private:
    std::vector<int32_t> recorded_;
    double acceptance_;
    std::mt19937_64 rng_;
    size_t vocab_;
};

}  // namespace stormo

#include "runtime/replay_draft_source.hpp"

namespace stormo {

std::vector<int32_t> ReplayDraftSource::propose(const DraftContext& ctx, size_t limit) {
    std::vector<int32_t> drafts;
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    // recorded_[generated - 1] is the token chosen last; the drafts continue after it.
    for (size_t i = ctx.generated; i < recorded_.size() && drafts.size() < limit; ++i) {
        const int32_t right = recorded_[i];
        const bool keep = coin(rng_) < acceptance_;
        drafts.push_back(keep || vocab_ < 2 ? right : static_cast<int32_t>((static_cast<size_t>(right) + 1) % vocab_));
    }
    return drafts;
}

}  // namespace stormo

#include "store/adaptive_eviction.hpp"

#include <algorithm>
#include <vector>

#include "store/slot_model.hpp"

namespace stormo {
namespace {

// Hits are counted with a weight that fades by this share of itself per step of any layer: about
// 16 tokens' worth of steps make up the window the leader is chosen over. Long enough that a
// token's noise does not swap leaders, short enough to follow a change of text within a reply.
constexpr double kWindowTokens = 16.0;

class AdaptiveEviction final : public Eviction {
public:
    AdaptiveEviction(const EvictionSettings& settings, size_t slots, int n_layers, int n_experts)
        : keep_(1.0 - 1.0 / (kWindowTokens * std::max(n_layers, 1))) {
        for (double decay : {settings.decay, settings.recency_decay}) {
            EvictionSettings one = settings;
            one.policy = EvictionPolicy::hotness;
            one.decay = decay;
            candidates_.push_back(Candidate{make_eviction(one, slots, n_layers, n_experts), SlotModel(slots, n_layers, n_experts)});
        }
    }

    void on_layer_step(int layer) override {
        for (Candidate& c : candidates_) {
            c.shadow.end_step();  // the step before is over (nothing is pinned before the first)
            c.policy->on_layer_step(layer);
            c.score *= keep_;
        }
        // The leader changes only when another has strictly more: a tie keeps the current one (the
        // slow decay at the start). Where both hit alike (routes without locality) either leads.
        for (size_t i = 0; i < candidates_.size(); ++i)
            if (candidates_[i].score > candidates_[leader_].score) leader_ = i;
    }

    void on_use(int layer, int expert) override {
        for (Candidate& c : candidates_) {
            if (c.shadow.request(layer, expert, *c.policy) != SlotModel::Request::miss) c.score += 1.0;
            c.policy->on_use(layer, expert);
        }
    }

    bool colder(int la, int ea, int lb, int eb) const override { return leader().colder(la, ea, lb, eb); }
    bool displaces(int ln, int en, int lc, int ec) const override { return leader().displaces(ln, en, lc, ec); }

private:
    struct Candidate {
        std::unique_ptr<Eviction> policy;
        SlotModel shadow;
        double score = 0.0;
    };
    const Eviction& leader() const { return *candidates_[leader_].policy; }

    double keep_;
    std::vector<Candidate> candidates_;
    size_t leader_ = 0;
};

}  // namespace

std::unique_ptr<Eviction> make_adaptive_eviction(const EvictionSettings& settings, size_t slots, int n_layers, int n_experts) {
    return std::make_unique<AdaptiveEviction>(settings, slots, n_layers, n_experts);
}

}  // namespace stormo

#include "runtime/speculation.hpp"

#include "runtime/context_draft_source.hpp"
#include "runtime/grammar_draft_source.hpp"
#include "runtime/mtp_draft_source.hpp"

namespace stormo {
namespace {

// The tokens a source's drafts are expected to add to a verify step of `limit` drafts, by the
// gate's per-source acceptance (0 without a gate).
double expected_gain(const SpeculationGate* gate, std::string_view source, size_t limit) {
    if (gate == nullptr) return 0.0;
    return SpeculationGate::expected_tokens(gate->acceptances(source, limit), limit) - 1.0;
}

// Auto: a grammar's forced tokens when it has some; else prompt lookup, or the MTP layer when the
// model has one loaded and the gate's acceptance of its drafts promises more than the lookup's
// (or the lookup finds nothing). The MTP source sees every step's hidden rows either way.
class AutoDraftSource final : public DraftSource {
public:
    explicit AutoDraftSource(std::unique_ptr<MtpDraftSource> mtp) : mtp_(std::move(mtp)) {}
    std::string_view name() const override { return last_; }
    bool wants_hidden() const override { return mtp_ != nullptr; }
    void observe_hidden(size_t first_position, std::span<const float> rows) override {
        if (mtp_) mtp_->observe_hidden(first_position, rows);
    }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override {
        if (auto forced = grammar_.propose(ctx, limit); !forced.empty()) {
            last_ = grammar_.name();
            return forced;
        }
        std::vector<int32_t> found = context_.propose(ctx, limit);
        last_ = context_.name();
        if (mtp_ == nullptr) return found;
        const bool mtp_promises_more = expected_gain(ctx.gate, mtp_->name(), limit) >
                                       expected_gain(ctx.gate, context_.name(), found.size());
        if (!found.empty() && !mtp_promises_more) return found;
        std::vector<int32_t> drafted = mtp_->propose(ctx, limit);
        if (drafted.empty()) return found;
        last_ = mtp_->name();
        return drafted;
    }

private:
    GrammarDraftSource grammar_;
    ContextDraftSource context_;
    std::unique_ptr<MtpDraftSource> mtp_;
    std::string_view last_ = "context";
};

}  // namespace

Expected<SpeculateMode> speculate_mode_from_text(std::string_view text, std::string_view origin) {
    if (auto mode = speculate_mode_from_name(text)) return *mode;
    return fail(ErrorKind::invalid_argument,
                std::string(origin) + ": \"" + std::string(text) + "\" is not one of auto, off, context, mtp, grammar");
}

Expected<void> check_speculation(const SpeculationSettings& settings, std::string_view model_name, std::string_view origin,
                                 bool mtp_available) {
    if (settings.draft_max < 1 || settings.draft_max > SpeculationSettings::kDraftMaxLimit)
        return fail(ErrorKind::invalid_argument, std::string(origin) + ": the draft maximum must lie in [1, " +
                                                     std::to_string(SpeculationSettings::kDraftMaxLimit) + "], not " +
                                                     std::to_string(settings.draft_max));
    if (settings.mode == SpeculateMode::mtp && !mtp_available)
        return fail(ErrorKind::unsupported, std::string(origin) + ": mtp: " + std::string(model_name) +
                                                " has no multi-token-prediction layer loaded (its config.json has no "
                                                "num_nextn_predict_layers, or the run did not ask for it); use context, grammar or auto");
    return {};
}

std::unique_ptr<DraftSource> draft_source_for(SpeculateMode mode, bool constrained, const MtpDraft* mtp, size_t capacity) {
    auto mtp_source = [&]() -> std::unique_ptr<MtpDraftSource> {
        if (mtp == nullptr || capacity == 0) return nullptr;
        return std::make_unique<MtpDraftSource>(*mtp, capacity);
    };
    switch (mode) {
        case SpeculateMode::automatic: return std::make_unique<AutoDraftSource>(mtp_source());
        case SpeculateMode::mtp: return mtp_source();
        case SpeculateMode::context: return std::make_unique<ContextDraftSource>();
        case SpeculateMode::grammar:
            if (constrained) return std::make_unique<GrammarDraftSource>();
            return nullptr;
        case SpeculateMode::off: return nullptr;
    }
    return nullptr;
}

void SpeculationStats::add(const SpeculationStats& o) {
    verify_steps += o.verify_steps;
    drafted += o.drafted;
    accepted += o.accepted;
    verify_seconds += o.verify_seconds;
    plain_steps += o.plain_steps;
    plain_seconds += o.plain_seconds;
    for (const auto& [name, s] : o.by_source) {
        by_source[name].drafted += s.drafted;
        by_source[name].accepted += s.accepted;
    }
    for (const auto& [k, n] : o.gate_choices) gate_choices[k] += n;
}

}  // namespace stormo

#include "runtime/speculation.hpp"

#include "runtime/context_draft_source.hpp"
#include "runtime/grammar_draft_source.hpp"

namespace stormo {
namespace {

// Auto: a grammar's forced tokens when it has some, else prompt lookup.
class AutoDraftSource final : public DraftSource {
public:
    std::string_view name() const override { return last_; }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override {
        if (auto forced = grammar_.propose(ctx, limit); !forced.empty()) {
            last_ = grammar_.name();
            return forced;
        }
        last_ = context_.name();
        return context_.propose(ctx, limit);
    }

private:
    GrammarDraftSource grammar_;
    ContextDraftSource context_;
    std::string_view last_ = "context";
};

}  // namespace

Expected<SpeculateMode> speculate_mode_from_text(std::string_view text, std::string_view origin) {
    if (auto mode = speculate_mode_from_name(text)) return *mode;
    return fail(ErrorKind::invalid_argument,
                std::string(origin) + ": \"" + std::string(text) + "\" is not one of auto, off, context, mtp, grammar");
}

Expected<void> check_speculation(const SpeculationSettings& settings, std::string_view model_name, std::string_view origin) {
    if (settings.draft_max < 1 || settings.draft_max > SpeculationSettings::kDraftMaxLimit)
        return fail(ErrorKind::invalid_argument, std::string(origin) + ": the draft maximum must lie in [1, " +
                                                     std::to_string(SpeculationSettings::kDraftMaxLimit) + "], not " +
                                                     std::to_string(settings.draft_max));
    if (settings.mode == SpeculateMode::mtp)
        return fail(ErrorKind::unsupported, std::string(origin) + ": mtp: " + std::string(model_name) +
                                                " has no multi-token-prediction head loaded; MTP drafting is not implemented yet"
                                                " (use context, grammar or auto)");
    return {};
}

std::unique_ptr<DraftSource> draft_source_for(SpeculateMode mode, bool constrained) {
    switch (mode) {
        case SpeculateMode::automatic: return std::make_unique<AutoDraftSource>();
        case SpeculateMode::context: return std::make_unique<ContextDraftSource>();
        case SpeculateMode::grammar:
            if (constrained) return std::make_unique<GrammarDraftSource>();
            return nullptr;
        case SpeculateMode::off:
        case SpeculateMode::mtp: return nullptr;
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

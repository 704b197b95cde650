#pragma once
// Speculative decoding's settings and statistics (docs/speculation.md): which draft source a
// request uses, how many drafts a verify step may carry, and what the drafts did.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/draft_source.hpp"
#include "runtime/speculate_mode.hpp"
#include "runtime/speculation_gate.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct MtpDraft;

// "auto", "off", "context", "mtp", "grammar"; anything else is an error naming `origin`.
Expected<SpeculateMode> speculate_mode_from_text(std::string_view text, std::string_view origin);

struct SpeculationSettings {
    SpeculateMode mode = SpeculateMode::off;
    size_t draft_max = 8;  // drafts a verify step carries at most (its block is draft_max + 1 rows)
    static constexpr size_t kDraftMaxLimit = 64;
};

// The settings are usable for this model: draft_max within [1, kDraftMaxLimit], and `mtp` only
// where a multi-token-prediction layer is loaded (or will be: `mtp_available`); else it fails
// loudly, naming the model and `origin`.
Expected<void> check_speculation(const SpeculationSettings& settings, std::string_view model_name, std::string_view origin,
                                 bool mtp_available);

// Whether a mode loads the model's MTP layer when the checkpoint has one: `mtp` only. `auto`
// drafts from the layer only where the run loaded it: the source runs the layer over every kept
// position, k = 0 steps included, and the gate does not price that, so auto loading it made the
// demos decode at 0.44x (docs/speculation.md, "Limits").
inline bool loads_mtp(SpeculateMode mode) { return mode == SpeculateMode::mtp; }

// The source a mode uses for one request: null for off (and for auto/context/grammar when the
// request cannot use one: grammar without a constraint gives none). `mtp`: the engine's loaded
// MTP layer or null; `capacity` the request's session context (the MTP's own KV is as long).
std::unique_ptr<DraftSource> draft_source_for(SpeculateMode mode, bool constrained, const MtpDraft* mtp = nullptr,
                                              size_t capacity = 0);

// What speculation did for one request, or summed over many.
struct SpeculationStats {
    uint64_t verify_steps = 0;      // decode steps that carried drafts
    uint64_t drafted = 0;           // draft tokens verified
    uint64_t accepted = 0;          // of those, kept
    double verify_seconds = 0.0;    // the verify steps' forward time
    uint64_t plain_steps = 0;       // decode steps without drafts
    double plain_seconds = 0.0;
    struct BySource {
        uint64_t drafted = 0;
        uint64_t accepted = 0;
    };
    std::map<std::string, BySource, std::less<>> by_source;
    std::map<size_t, uint64_t> gate_choices;  // draft length chosen -> decode steps
    void add(const SpeculationStats& other);
    double acceptance() const { return drafted ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0; }
};

}  // namespace stormo

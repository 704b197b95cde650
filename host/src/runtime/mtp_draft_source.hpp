#pragma once
// Drafts from the checkpoint's multi-token-prediction layer (docs/speculation-mtp.md). MTP row i
// reads the main model's final-normed row h_i and the token s[i+1], runs the layer's decoder
// layer over the MTP's own KV of rows 0..i, and its logits guess s[i+2]. Before a verify step the
// source writes the MTP rows of the positions committed since the last one (from the hidden rows
// the steps handed over), takes the last row's argmax as the first draft, and chains further
// drafts from the carried output (the family's carry) and the draft before; the chained rows are
// provisional and let go at once. The MTP's KV is a session of its own over the draft model
// (one layer of latents, and GLM's indexer keys), as long as the main session's context.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/draft_source.hpp"
#include "runtime/forward.hpp"
#include "runtime/session.hpp"
#include "stormo/family.hpp"

namespace stormo {

// The engine's loaded MTP layer: the draft model and the pipeline that runs it over the main
// model's expert store (its experts are the store's layer model.draft_layer()).
struct MtpDraft {
    const DraftModel* model = nullptr;
    Pipeline* pipeline = nullptr;
};

class MtpDraftSource final : public DraftSource {
public:
    // `capacity`: the main session's context (the MTP rows never outnumber its positions).
    MtpDraftSource(const MtpDraft& mtp, size_t capacity);
    std::string_view name() const override { return "mtp"; }
    bool wants_hidden() const override { return true; }
    void observe_hidden(size_t first_position, std::span<const float> rows) override;
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override;
    // The MTP rows written from committed positions (tests: a rejected draft leaves none).
    size_t committed_rows() const { return session_.position(); }
    // The last failure of the MTP's own forward pass, if any (it drafts nothing then; the
    // request's tokens do not depend on it).
    const std::optional<Error>& last_error() const { return last_error_; }

private:
    // Writes the MTP rows of main positions [base_ + session_.position(), end): token s[i+1] and
    // hidden h_i each. Returns the argmax of the last row and its carried hidden row.
    Expected<int32_t> run_rows(std::span<const int32_t> tokens, std::span<const float> hidden, std::vector<float>& carry);
    // Forgets the MTP rows from main position `position` on.
    void forget_from(size_t position);

    MtpDraft mtp_;
    Session session_;
    size_t width_ = 0;
    // The main model's committed hidden rows of positions [base_, base_ + hidden_.size() / width_).
    // A request that continues a session from position p > 0 (a chat's later turn) has no rows
    // before p: its MTP rows start there, at MTP position 0.
    size_t base_ = 0;
    std::vector<float> hidden_;
    std::optional<Error> last_error_;
};

}  // namespace stormo

#include "runtime/mtp_draft_source.hpp"

#include <algorithm>

namespace stormo {

MtpDraftSource::MtpDraftSource(const MtpDraft& mtp, size_t capacity)
    : mtp_(mtp), session_(*mtp.model, capacity), width_(mtp.model->hidden_size()) {}

void MtpDraftSource::forget_from(size_t position) {
    const size_t row = position > base_ ? position - base_ : 0;
    if (row < session_.position()) session_.rewind(row);
}

void MtpDraftSource::observe_hidden(size_t first_position, std::span<const float> rows) {
    if (rows.empty() || width_ == 0 || rows.size() % width_ != 0) return;
    const size_t held = hidden_.size() / width_;
    if (hidden_.empty() || first_position < base_ || first_position > base_ + held) {
        // Nothing before first_position to go on from: the MTP rows start afresh there.
        hidden_.clear();
        base_ = first_position;
        session_.rewind(0);
    } else {
        // MTP row i read h_i: the rows from first_position on are recomputed from the new ones.
        hidden_.resize((first_position - base_) * width_);
        forget_from(first_position);
    }
    hidden_.insert(hidden_.end(), rows.begin(), rows.end());
}

Expected<int32_t> MtpDraftSource::run_rows(std::span<const int32_t> tokens, std::span<const float> hidden,
                                           std::vector<float>& carry) {
    const size_t n = tokens.size();
    std::vector<float> from(hidden.begin(), hidden.end()), input(n * width_);
    STORMO_TRY(mtp_.model->draft_input(tokens, Rows{from.data(), n, width_}, Rows{input.data(), n, width_}));
    ForwardOptions options;
    options.input_rows = input;
    options.first_layer = mtp_.model->draft_layer();
    int32_t token = -1;
    options.argmax_out = &token;
    std::vector<float> normed, raw;
    options.final_rows_out = &normed;
    const bool carries_normed = mtp_.model->carries_normed();
    if (!carries_normed) options.pre_norm_rows_out = &raw;
    STORMO_TRY(mtp_.pipeline->forward(session_, tokens, options));
    const std::vector<float>& out = carries_normed ? normed : raw;
    carry.assign(out.end() - static_cast<ptrdiff_t>(width_), out.end());
    return token;
}

std::vector<int32_t> MtpDraftSource::propose(const DraftContext& ctx, size_t limit) {
    if (limit == 0 || ctx.tokens.size() < 2 || hidden_.empty()) return {};
    // s_n is the token chosen last: MTP row n - 1 (h_{n-1}, s_n) drafts s_{n+1}.
    const size_t n = ctx.tokens.size() - 1;
    const size_t held = hidden_.size() / width_;
    if (n <= base_ || base_ + held < n) return {};
    // MTP row j was written with token s[base_ + j + 1]: rows whose token the sequence no longer
    // holds are forgotten, and the last row is recomputed for its logits when it is there already.
    const std::span<const int32_t> written = session_.tokens();
    size_t keep = 0;
    while (keep < written.size() && base_ + keep + 1 <= n && written[keep] == ctx.tokens[base_ + keep + 1]) ++keep;
    keep = std::min(keep, n - 1 - base_);
    session_.rewind(keep);
    const size_t from = base_ + keep;
    std::vector<float> carry;
    auto first = run_rows(ctx.tokens.subspan(from + 1, n - from),
                          std::span<const float>(hidden_).subspan((from - base_) * width_, (n - from) * width_), carry);
    if (!first) {
        last_error_ = first.error();
        return {};
    }
    const size_t committed = session_.position();
    std::vector<int32_t> drafts{*first};
    // Chained drafts: row n + j reads (carry, d_j); these rows are provisional, let go below.
    while (drafts.size() < limit) {
        const int32_t previous = drafts.back();
        auto next = run_rows(std::span<const int32_t>(&previous, 1), std::vector<float>(carry), carry);
        if (!next) {
            last_error_ = next.error();
            break;
        }
        drafts.push_back(*next);
    }
    session_.rewind(committed);
    return drafts;
}

}  // namespace stormo

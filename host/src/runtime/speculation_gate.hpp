#pragma once
// The gate of speculative decoding (docs/speculation.md, "The gate"): before each verify step it
// picks the draft length k (0: plain decoding) that maximises the expected tokens per second,
//     rate(k) = E[tokens | k] / t(1 + k),   E[tokens | k] = 1 + sum_{i=1..k} prod_{j<=i} p_j,
// with p_j the acceptance of draft position j given the ones before it, measured online per
// source (a Beta prior, decayed counts; an untried position's prior is the position before it),
// and t(n) the seconds of a step of n rows learned from
// this run's steps (StepCostModel), the prompt's included. When k = 0 wins it still tries k = 1
// now and then, so a source whose text turns repetitive recovers: once early (a short answer
// would otherwise end before the first try, and the cost model has seen no verify yet), then at
// an interval that doubles while the tries fail. Where timed verify steps say that even a draft
// sure to be right could not gain a tenth, t(2) >= 2 t(1) / 1.1 (a tiny model, whose every row
// costs a whole step), it tries only at the longest interval.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stormo {

// What the MoE layers of a model read per row: experts per layer, chosen per row, MoE layers.
struct MoeShape {
    size_t moe_layers = 0;
    size_t experts = 0;
    size_t top_k = 0;
};

// The step's cost learned from this run: t(n) = a + b (n - 1) + c m(n), fitted by decayed least
// squares over the steps observed (rows, experts read on demand, seconds), where m(n) is the
// experts a step of n rows is expected to read that are not resident:
//     m(n) = moe_layers * E (1 - (1 - K/E)^n) * (1 - h),
// the expected union of n rows' top-K of E experts per layer times the share h of acquired
// experts found resident (the store's hits over hits + misses, decayed likewise). The first
// decode step seen adds a prior on the slope b, worth one observation and decayed like them:
// a second row costs what a prompt row cost (when the prompt's step was timed) or else a whole
// step (no gain expected); the verify steps then soon outweigh it.
class StepCostModel {
public:
    explicit StepCostModel(MoeShape shape) : shape_(shape) {}
    enum class StepKind { decode, prompt };
    // One step: its rows, the experts it acquired (hits + misses) and read on demand (misses),
    // and its seconds.
    void observe(size_t rows, uint64_t acquired, uint64_t misses, double seconds, StepKind kind = StepKind::decode);
    // A decode step has been seen: the fit has its constant term.
    bool ready() const { return decode_seen_; }
    // A step of several decode rows (a verify) has been timed.
    bool verify_priced() const { return widest_ > 1; }
    double predict(size_t rows) const;
    // predict(1) .. predict(max_rows), from one fit.
    std::vector<double> predict_up_to(size_t max_rows) const;
    // The widest decode step timed (0: none).
    size_t widest_timed() const { return widest_; }
    // predict_up_to(max_rows), but a step wider than any timed priced at most as the widest timed
    // one plus a prompt row per further row (what a row costs when many share a step): the price
    // of a try, where the fit can only extend its line (unchanged without a timed prompt).
    std::vector<double> hopeful_up_to(size_t max_rows) const;
    double expected_misses(size_t rows) const;
    // The fitted coefficients (a, b, c), for the statistics.
    std::vector<double> coefficients() const;

private:
    double predict_with(const std::vector<double>& coefficients, size_t rows) const;
    // predict_with(coefficients, 1 .. max_rows).
    std::vector<double> line_up_to(const std::vector<double>& coefficients, size_t max_rows) const;
    MoeShape shape_;
    static constexpr double kDecay = 0.97;
    // Decayed normal equations over features (1, n - 1, m) and their targets.
    double xx_[3][3] = {};
    double xy_[3] = {};
    double hits_ = 0.0, acquired_ = 0.0;
    bool decode_seen_ = false;
    size_t widest_ = 0;  // the most rows of a decode step timed
    std::optional<double> prompt_row_seconds_;
};

// Acceptance counts per draft position, decayed by kDecay a verify step: what one source's drafts
// did, for a gate (one request) or for a run's requests together (AcceptanceHistory).
struct AcceptanceCounts {
    static constexpr double kDecay = 0.98;
    std::vector<double> accepted, tried;  // per draft position
    // A verify step of `drafted` drafts kept the first `accepted`.
    void record(size_t drafted, size_t accepted_drafts);
};
using AcceptanceBySource = std::map<std::string, AcceptanceCounts, std::less<>>;
// Adds a verify step of `source` to its counts (created at the first).
void record_acceptance(AcceptanceBySource& counts, std::string_view source, size_t drafted, size_t accepted);

// What a run's requests saw of each source's acceptance, carried from request to request as the
// step costs are (serve, chat, pipe, bench's rounds): a new request's gate starts from it, worth
// at most a few tries, where it would start from the prior alone. Texts differ between requests,
// so it weighs little: the request's own verifies outweigh it after a few steps.
class AcceptanceHistory {
public:
    static constexpr double kCarriedTries = 4.0;  // the weight of the history at position 1
    void record(std::string_view source, size_t drafted, size_t accepted);
    // The history's counts for a new request: scaled so position 1 weighs at most kCarriedTries.
    AcceptanceBySource carried() const;

private:
    AcceptanceBySource counts_;
};

class SpeculationGate {
public:
    // `history`, when given, seeds the counts and receives every record.
    SpeculationGate(size_t draft_max, StepCostModel& costs, AcceptanceHistory* history = nullptr)
        : draft_max_(draft_max), costs_(&costs), history_(history) {
        if (history_ != nullptr) counts_ = history_->carried();
    }
    // The draft length for the next step, at most `limit`.
    size_t choose(std::string_view source, size_t limit);
    // A verify step of `drafted` drafts from `source` kept the first `accepted`.
    void record(std::string_view source, size_t drafted, size_t accepted);
    // The acceptance estimate of draft position j (1-based) given the ones before it.
    double acceptance(std::string_view source, size_t j) const;
    // acceptance(source, 1) .. acceptance(source, limit), in one pass.
    std::vector<double> acceptances(std::string_view source, size_t limit) const;
    static double expected_tokens(const std::vector<double>& p, size_t k);

private:
    // Position 1's prior: a mean of 1/2 worth one try; position j's: position j - 1's estimate.
    static constexpr double kPriorMean = 0.5, kPriorTried = 1.0;
    static constexpr size_t kOpeningExploreInterval = 2, kFirstExploreInterval = 16, kLastExploreInterval = 512;
    static constexpr double kLeastExploreGain = 1.1;  // what a right draft must gain for a try
    // The predicted tokens per second over plain decoding below which the gate does not draft. On
    // the gpt-oss-120b shape streamed under an 8 GiB cap, drafts right about 58% of the time (a
    // replay at P = 0.5) and a 2-row verify at 1.57 plain steps predicted about 1% more; the gate
    // drafted on 105 of 146 steps and decoded at 0.962x of plain (median of 9 rounds).
    static constexpr double kLeastDraftGain = 1.05;
    // The length that would pay most if the steps wider than any timed cost what hopeful_up_to
    // says, when that beats `best_rate` by the margin; else 0.
    size_t wider_try(const std::vector<double>& p, size_t limit, double best_rate) const;
    size_t draft_max_;
    StepCostModel* costs_;
    AcceptanceHistory* history_;
    AcceptanceBySource counts_;
    size_t since_verify_ = 0;
    size_t explore_interval_ = kOpeningExploreInterval;
    bool exploring_ = false;
};

// What a run's gates learn, shared by its requests (a server's requests, a chat's or a pipe's
// turns, bench's rounds or batch): the step costs and the acceptance by source.
struct SpeculationMemory {
    explicit SpeculationMemory(MoeShape shape) : costs(shape) {}
    StepCostModel costs;
    AcceptanceHistory acceptance;
};

}  // namespace stormo

#include "runtime/speculation_gate.hpp"

#include <algorithm>
#include <cmath>

namespace stormo {
namespace {

// Solves A x = y for a 3x3 system by Gaussian elimination with partial pivoting; a column
// without data (no expert was ever read on demand) keeps its coefficient at 0.
std::vector<double> solve3(double a[3][3], double y[3]) {
    double m[3][4];
    double scale = 0.0;
    for (int i = 0; i < 3; ++i) scale = std::max(scale, std::abs(a[i][i]));
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m[i][j] = a[i][j] + (i == j ? 1e-12 * std::max(scale, 1e-300) : 0.0);
        m[i][3] = y[i];
    }
    for (int c = 0; c < 3; ++c) {
        int pivot = c;
        for (int r = c + 1; r < 3; ++r)
            if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
        std::swap(m[c], m[pivot]);
        if (std::abs(m[c][c]) < 1e-300) continue;
        for (int r = 0; r < 3; ++r) {
            if (r == c) continue;
            const double f = m[r][c] / m[c][c];
            for (int j = c; j < 4; ++j) m[r][j] -= f * m[c][j];
        }
    }
    std::vector<double> x(3, 0.0);
    for (int i = 0; i < 3; ++i) x[i] = std::abs(m[i][i]) < 1e-300 ? 0.0 : m[i][3] / m[i][i];
    return x;
}

}  // namespace

double StepCostModel::expected_misses(size_t rows) const {
    if (shape_.experts == 0 || shape_.moe_layers == 0 || acquired_ <= 0.0) return 0.0;
    const double e = static_cast<double>(shape_.experts);
    const double k = std::min(static_cast<double>(shape_.top_k), e);
    const double uni = e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(rows)));
    const double resident = hits_ / acquired_;
    return static_cast<double>(shape_.moe_layers) * uni * (1.0 - resident);
}

void StepCostModel::observe(size_t rows, uint64_t acquired, uint64_t misses, double seconds, StepKind kind) {
    if (rows == 0 || !(seconds >= 0.0)) return;
    if (kind == StepKind::prompt) {
        // Not a point of the fit: a prompt of hundreds of rows would pin the slope by its leverage
        // alone, while a verify's few rows cost what they cost (on gpt-oss-20b in RAM a prompt
        // row took 0.4 of a decode step, a verify's second row 0.7). It sets the prior instead.
        prompt_row_seconds_ = seconds / static_cast<double>(rows);
        return;
    }
    for (auto& row : xx_)
        for (double& v : row) v *= kDecay;
    for (double& v : xy_) v *= kDecay;
    hits_ = hits_ * kDecay + static_cast<double>(acquired - std::min(acquired, misses));
    acquired_ = acquired_ * kDecay + static_cast<double>(acquired);
    const auto add = [this](const double (&f)[3], double t) {
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) xx_[i][j] += f[i] * f[j];
            xy_[i] += f[i] * t;
        }
    };
    if (!decode_seen_) {
        // The prior on the slope alone, worth one step and decayed like them: a second row costs
        // a prompt row when a prompt was timed, else a whole step (no gain expected). On the
        // slope, not on a point of two rows: a point's height carries this first step's own time,
        // and a first step slowed twofold (a cold start, a busy machine) priced every further row
        // at a whole step for the run, the decode steps of one row being unable to correct it.
        decode_seen_ = true;
        add({0.0, 1.0, 0.0}, prompt_row_seconds_.value_or(seconds / static_cast<double>(rows)));
    }
    add({1.0, static_cast<double>(rows - 1), static_cast<double>(misses)}, seconds);
    widest_ = std::max(widest_, rows);
}

std::vector<double> StepCostModel::coefficients() const {
    if (!ready()) return {0.0, 0.0, 0.0};
    double a[3][3], y[3];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) a[i][j] = xx_[i][j];
        y[i] = xy_[i];
    }
    std::vector<double> x = solve3(a, y);
    for (double& v : x) v = std::max(0.0, v);
    return x;
}

double StepCostModel::predict_with(const std::vector<double>& c, size_t rows) const {
    return c[0] + c[1] * static_cast<double>(rows - 1) + c[2] * expected_misses(rows);
}

double StepCostModel::predict(size_t rows) const { return predict_with(coefficients(), rows); }

std::vector<double> StepCostModel::line_up_to(const std::vector<double>& c, size_t max_rows) const {
    std::vector<double> t(max_rows);
    for (size_t rows = 1; rows <= max_rows; ++rows) t[rows - 1] = predict_with(c, rows);
    return t;
}

std::vector<double> StepCostModel::predict_up_to(size_t max_rows) const { return line_up_to(coefficients(), max_rows); }

std::vector<double> StepCostModel::hopeful_up_to(size_t max_rows) const {
    const std::vector<double> c = coefficients();
    std::vector<double> t = line_up_to(c, max_rows);
    // Below the widest step timed, and without a timed prompt, the fit's line as it is.
    if (!prompt_row_seconds_ || widest_ == 0) return t;
    const double saving = c[1] - *prompt_row_seconds_;
    if (saving <= 0.0) return t;
    for (size_t rows = widest_ + 1; rows <= max_rows; ++rows) t[rows - 1] -= saving * static_cast<double>(rows - widest_);
    return t;
}

std::vector<double> SpeculationGate::acceptances(std::string_view source, size_t limit) const {
    // Position 1's prior is one half; position j's is position j - 1's estimate: a position the
    // gate has not tried (it never drafted that far) is expected to do as the one before it did.
    // With a prior of one half for every position, a source right on every draft of one kept
    // k = 1 for good on gpt-oss-20b in RAM (1.22x), where longer drafts paid more.
    const auto it = counts_.find(source);
    std::vector<double> p(limit);
    double prior = kPriorMean;
    for (size_t i = 0; i < limit; ++i) {
        double accepted = 0.0, tried = 0.0;
        if (it != counts_.end() && i < it->second.tried.size()) {
            accepted = it->second.accepted[i];
            tried = it->second.tried[i];
        }
        p[i] = prior = (accepted + kPriorTried * prior) / (tried + kPriorTried);
    }
    return p;
}

double SpeculationGate::acceptance(std::string_view source, size_t j) const {
    return j == 0 ? kPriorMean : acceptances(source, j).back();
}

double SpeculationGate::expected_tokens(const std::vector<double>& p, size_t k) {
    double expected = 1.0, run = 1.0;
    for (size_t j = 0; j < k && j < p.size(); ++j) {
        run *= p[j];
        expected += run;
    }
    return expected;
}

size_t SpeculationGate::choose(std::string_view source, size_t limit) {
    limit = std::min(limit, draft_max_);
    if (limit == 0 || !costs_->ready()) return 0;
    const std::vector<double> p = acceptances(source, limit);
    // t[n - 1]: the predicted seconds of a step of n rows.
    const std::vector<double> t = costs_->predict_up_to(1 + limit);
    size_t best = 0;
    const double plain_rate = 1.0 / std::max(t[0], 1e-12);
    double best_rate = plain_rate;
    for (size_t k = 1; k <= limit; ++k) {
        const double rate = expected_tokens(p, k) / std::max(t[k], 1e-12);
        if (rate > best_rate * (1.0 + 1e-9)) {
            best = k;
            best_rate = rate;
        }
    }
    // A draft must promise a clear gain: near break-even the estimates' own noise decides, and a
    // wrong guess there loses while a right one gains next to nothing.
    if (best_rate < plain_rate * kLeastDraftGain) {
        best = 0;
        best_rate = plain_rate;
    }
    exploring_ = false;
    // A verify wider than any step timed is priced by the fit's line through the narrower ones,
    // which a verify's rows can undercut as they grow: on gpt-oss-20b in RAM the line through
    // 2-row verifies (1.81 plain steps) priced a 9-row one at about 7 steps, and it cost 3.97.
    // Where a prompt row (the price of a row among many) says a wider verify could pay more than
    // the best timed length, it is tried: its verify is then timed, and the fit knows.
    if (const size_t wider = wider_try(p, limit, best_rate); wider > 0) best = wider;
    if (best > 0) {
        since_verify_ = 0;
        return best;
    }
    // A try can pay only if a right draft could: two tokens from one step of two rows. Where
    // verify steps measured that it cannot (a tiny model, whose every row costs a whole step),
    // tries come only at the longest interval; where the prompt or the prior alone said so, the
    // opening try still comes, so that one slow step timed on a busy machine cannot end
    // speculation for the run before any verify was timed.
    const bool hopeless = costs_->verify_priced() && 2.0 * t[0] <= kLeastExploreGain * t[1];
    if (++since_verify_ >= (hopeless ? kLastExploreInterval : explore_interval_)) {
        since_verify_ = 0;
        exploring_ = true;
        return 1;
    }
    return 0;
}

size_t SpeculationGate::wider_try(const std::vector<double>& p, size_t limit, double best_rate) const {
    if (costs_->widest_timed() >= 1 + limit) return 0;
    const std::vector<double> t = costs_->hopeful_up_to(1 + limit);
    size_t wider = 0;
    double wider_rate = best_rate * kLeastDraftGain;
    for (size_t k = std::max<size_t>(1, costs_->widest_timed()); k <= limit; ++k) {
        const double rate = expected_tokens(p, k) / std::max(t[k], 1e-12);
        if (rate > wider_rate) {
            wider = k;
            wider_rate = rate;
        }
    }
    return wider;
}

void AcceptanceCounts::record(size_t drafted, size_t accepted_drafts) {
    if (tried.size() < drafted) {
        tried.resize(drafted, 0.0);
        accepted.resize(drafted, 0.0);
    }
    for (size_t j = 0; j < tried.size(); ++j) {
        tried[j] *= kDecay;
        accepted[j] *= kDecay;
    }
    // Positions 1..accepted were right given the ones before; accepted + 1 was tried and wrong;
    // the ones after it were not tried (their rows saw a wrong token before them).
    for (size_t j = 0; j < std::min(drafted, accepted_drafts + 1); ++j) {
        tried[j] += 1.0;
        if (j < accepted_drafts) accepted[j] += 1.0;
    }
}

void record_acceptance(AcceptanceBySource& counts, std::string_view source, size_t drafted, size_t accepted) {
    auto it = counts.find(source);
    if (it == counts.end()) it = counts.emplace(std::string(source), AcceptanceCounts{}).first;
    it->second.record(drafted, accepted);
}

void AcceptanceHistory::record(std::string_view source, size_t drafted, size_t accepted) {
    if (drafted > 0) record_acceptance(counts_, source, drafted, accepted);
}

AcceptanceBySource AcceptanceHistory::carried() const {
    AcceptanceBySource out = counts_;
    for (auto& [source, c] : out) {
        const double first = c.tried.empty() ? 0.0 : c.tried.front();
        if (first <= kCarriedTries) continue;
        const double scale = kCarriedTries / first;
        for (double& v : c.tried) v *= scale;
        for (double& v : c.accepted) v *= scale;
    }
    return out;
}

void SpeculationGate::record(std::string_view source, size_t drafted, size_t accepted) {
    if (drafted == 0) return;
    record_acceptance(counts_, source, drafted, accepted);
    if (history_ != nullptr) history_->record(source, drafted, accepted);
    if (exploring_)
        explore_interval_ =
            accepted > 0 ? kFirstExploreInterval : std::clamp(explore_interval_ * 2, kFirstExploreInterval, kLastExploreInterval);
    exploring_ = false;
}

}  // namespace stormo

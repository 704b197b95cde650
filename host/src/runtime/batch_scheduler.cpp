#include "runtime/batch_scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace stormo {
namespace {


// At most `limit` positions from `position`, ending at the first multiple of `boundary` they cross.
size_t chunk_limit(size_t position, size_t limit, size_t boundary) {
    if (boundary == 0) return limit;
    const size_t next = (position / boundary + 1) * boundary;
    return std::min(limit, next - position);
}

void deliver(SequenceGeneration& sequence, const SequenceStep& step) {
    using Want = SequenceStep::Want;
    if (step.want == Want::all_argmax || step.want == Want::all_logits)
        sequence.consumed_rows(step.tokens.size(), step.logits, step.argmaxes, step.hidden);
    else
        sequence.consumed_rows(step.tokens.size(), step.logits, std::span<const int32_t>(&step.argmax, 1), step.hidden);
}

}  // namespace

BatchScheduler::BatchScheduler(Pipeline& pipeline, BatchSettings settings)
    : pipeline_(pipeline), settings_(settings) {
    settings_.step_rows = std::max<size_t>(1, settings_.step_rows);
}

BatchStep BatchScheduler::step(std::span<SequenceGeneration* const> running) {
    BatchStep report;
    std::vector<SequenceGeneration*> decoding, prefilling;
    for (SequenceGeneration* sequence : running) {
        if (sequence == nullptr || sequence->done()) continue;
        if (sequence->cancel_requested()) {
            sequence->cancel();
            continue;
        }
        (sequence->prefilling() ? prefilling : decoding).push_back(sequence);
    }
    std::vector<SequenceGeneration*> chosen;
    std::vector<SequenceStep> steps;
    for (SequenceGeneration* sequence : decoding) {
        // A decode row, or a verify block of the last token and its drafts.
        sequence->plan_step(sequence->session().max_block());
        const std::span<const int32_t> tokens = sequence->next_tokens(1);
        chosen.push_back(sequence);
        steps.push_back({&sequence->session(), tokens, sequence->want(tokens.size()), {}, -1});
        steps.back().want_hidden = sequence->wants_hidden();
        report.decode_rows += tokens.size();
    }
    const size_t floor = std::max<size_t>(1, settings_.step_rows / 4);
    // Verify blocks count as the rows they are.
    size_t budget = settings_.step_rows > report.decode_rows ? std::max(settings_.step_rows - report.decode_rows, floor) : floor;
    if (!prefilling.empty()) {
        const size_t first = turn_++ % prefilling.size();
        for (size_t i = 0; i < prefilling.size() && budget > 0; ++i) {
            SequenceGeneration* sequence = prefilling[(first + i) % prefilling.size()];
            const size_t limit = chunk_limit(sequence->session().position(), std::min(budget, sequence->session().max_block()),
                                             settings_.chunk_boundary);
            const std::span<const int32_t> tokens = sequence->next_tokens(limit);
            chosen.push_back(sequence);
            steps.push_back({&sequence->session(), tokens, sequence->want(tokens.size()), {}, -1});
            steps.back().want_hidden = sequence->wants_hidden();  // an MTP source reads the prompt's rows
            report.prompt_rows += tokens.size();
            budget -= tokens.size();
        }
    }
    report.sequences = steps.size();
    if (steps.empty()) return report;
    std::vector<bool> reaches_boundary(steps.size(), false);
    if (const size_t b = settings_.route_boundary; b > 0)
        for (size_t i = 0; i < steps.size(); ++i)
            reaches_boundary[i] = (steps[i].session->position() + steps[i].tokens.size()) / b > steps[i].session->position() / b;
    auto routed = [&](size_t i) {
        if (reaches_boundary[i]) report.routes.push_back({chosen[i], steps[i].session->routed_experts()});
    };
    const ExpertStoreStats before = pipeline_.store().stats();
    const auto t0 = std::chrono::steady_clock::now();
    if (auto ran = pipeline_.forward_batch(steps); ran) {
        // A step of decode rows alone, or of prompt rows alone, prices the gate's rows; a mix of
        // both would not fit its model (a prompt row skips the head).
        if (report.prompt_rows == 0 || report.decode_rows == 0) {
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const ExpertStoreStats after = pipeline_.store().stats();
            for (SequenceGeneration* sequence : chosen)
                sequence->observe_step(report.decode_rows + report.prompt_rows, seconds,
                                       (after.hits + after.misses) - (before.hits + before.misses),
                                       after.misses - before.misses);
        }
        for (size_t i = 0; i < steps.size(); ++i) {
            deliver(*chosen[i], steps[i]);
            routed(i);
        }
        return report;
    } else if (steps.size() == 1) {
        chosen[0]->fail(ran.error());
        return report;
    }
    // Every session is as it was: run each alone, so only a sequence at fault fails.
    report.isolated = true;
    for (size_t i = 0; i < steps.size(); ++i) {
        if (auto alone = pipeline_.forward_batch(std::span<SequenceStep>(&steps[i], 1)); alone) {
            deliver(*chosen[i], steps[i]);
            routed(i);
        } else {
            chosen[i]->fail(alone.error());
        }
    }
    return report;
}

}  // namespace stormo

#include "runtime/forward.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/bounded_argmax.hpp"
#include "runtime/sampler.hpp"

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void add_into(std::vector<float>& x, const std::vector<float>& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

Rows rows_of(std::vector<float>& v, size_t n, size_t width) { return Rows{v.data(), n, width}; }

// How many rows chose each expert of `group`.
std::vector<size_t> rows_per_expert(std::span<const int32_t> group, const std::vector<std::vector<size_t>>& users) {
    std::vector<size_t> rows(group.size());
    for (size_t i = 0; i < group.size(); ++i) rows[i] = users[static_cast<size_t>(group[i])].size();
    return rows;
}

// The first row of `v` (rows of `width`) holding a NaN or an infinity, or n when none does. One
// pass over a block's rows per check: a few thousand floats against the layer's matrix products.
size_t first_non_finite_row(const std::vector<float>& v, size_t width) {
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i])) return i / width;
    return width ? v.size() / width : 0;
}

// NaN or Inf in the residual stream spreads to every later layer and the logits, where a sampler
// would turn it into token 0; stop at the first stage that produced it and name it.
// layer < 0: `part` names the whole stage ("the embedding"); else it is a part of that layer. The
// name is built only when the check fails: these checks run every layer of every step.
Expected<void> check_finite(const std::vector<float>& v, size_t width, std::span<const int64_t> positions, int layer,
                            const char* part) {
    const size_t row = first_non_finite_row(v, width);
    if (width == 0 || row >= v.size() / width) return {};
    const std::string stage = layer < 0 ? std::string(part) : "layer " + std::to_string(layer) + "'s " + part;
    return fail(ErrorKind::format, "non-finite values (NaN or Inf) first produced by " + stage + " at position " +
                                       std::to_string(positions[row]) +
                                       "; the checkpoint's weights may hold them (stormo inspect --check)");
}


Expected<void> validate_tokens(std::span<const int32_t> tokens, size_t vocab) {
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= vocab)
            return fail(ErrorKind::invalid_argument, "token id " + std::to_string(tokens[i]) + " at position " +
                                                         std::to_string(i) + " is outside the vocabulary [0, " +
                                                         std::to_string(vocab) + ")");
    return {};
}

// The tokens and the room a session has for them, checked before anything changes.
Expected<void> check_step(const Session& session, std::span<const int32_t> tokens, size_t vocab) {
    if (tokens.empty()) return fail(ErrorKind::invalid_argument, "no tokens to process");
    STORMO_TRY(validate_tokens(tokens, vocab));
    if (tokens.size() > session.remaining())
        return fail(ErrorKind::resource, "context full: " + std::to_string(session.position()) + " positions used + " +
                                             std::to_string(tokens.size()) + " new exceed the context of " +
                                             std::to_string(session.capacity()));
    return {};
}

}  // namespace

Expected<std::vector<float>> Pipeline::forward(Session& session, std::span<const int32_t> tokens,
                                               const ForwardOptions& options) {
    STORMO_TRY(check_step(session, tokens, model_.vocab_size()));
    if (!options.input_rows.empty() && options.input_rows.size() != tokens.size() * model_.hidden_size())
        return fail(ErrorKind::internal, "a draft call's input rows do not match its " + std::to_string(tokens.size()) + " tokens");
    const size_t start = session.position();
    const size_t block = std::max<size_t>(1, std::min(options.max_block, session.max_block()));
    if (session.needs_replay()) STORMO_TRY(replay(session, block));
    const size_t hidden = model_.hidden_size();
    const size_t vocab = model_.vocab_size();
    const size_t n_layers = static_cast<size_t>(model_.n_layers());
    std::vector<std::vector<float>> hidden_states;
    if (options.hidden_out) hidden_states.assign(n_layers + 1, {});

    std::vector<float> logits;
    if (options.final_rows_out != nullptr) options.final_rows_out->clear();
    if (options.pre_norm_rows_out != nullptr) options.pre_norm_rows_out->clear();
    std::vector<float> pre_norm;
    for (size_t begin = 0; begin < tokens.size(); begin += block) {
        const size_t n = std::min(block, tokens.size() - begin);
        std::vector<int64_t> positions(n);
        for (size_t i = 0; i < n; ++i) positions[i] = static_cast<int64_t>(session.position() + i);
        std::vector<float> x;
        session.will_write(session.position(), session.position() + n);
        const BlockPart part[1] = {{&session, tokens.subspan(begin, n)}};
        const std::span<const float> input =
            options.input_rows.empty() ? std::span<const float>() : options.input_rows.subspan(begin * hidden, n * hidden);
        // The last block's routing gives the session its routed_experts.
        const bool last_block = begin + n == tokens.size();
        BlockRoutes routes;
        block_routes_ = last_block ? &routes : nullptr;
        auto ran = run_block(part, positions, options, x, options.hidden_out ? &hidden_states : nullptr, Recording::on, input,
                             options.pre_norm_rows_out ? &pre_norm : nullptr);
        block_routes_ = nullptr;
        if (!ran) {
            // Through the session's rewind: if this request's blocks overwrote ring rows that `start`
            // needs, the next request replays.
            session.rewind(start);
            return tl::unexpected(ran.error());
        }
        session.advance(tokens.subspan(begin, n));
        if (last_block) session.set_routed_experts(experts_of_rows(routes, n, n));
        if (options.on_block) options.on_block(begin + n, tokens.size());
        // x holds the final-normed rows; the head runs only where logits are wanted.
        if (options.final_rows_out != nullptr) options.final_rows_out->insert(options.final_rows_out->end(), x.begin(), x.end());
        if (options.pre_norm_rows_out != nullptr)
            options.pre_norm_rows_out->insert(options.pre_norm_rows_out->end(), pre_norm.begin(), pre_norm.end());
        if (options.argmax_rows_out != nullptr) {
            if (begin == 0) options.argmax_rows_out->clear();
            auto picked = rows_argmax(x, positions);
            if (!picked) {
                session.rewind(start);
                return tl::unexpected(picked.error());
            }
            options.argmax_rows_out->insert(options.argmax_rows_out->end(), picked->begin(), picked->end());
        } else if (options.argmax_out != nullptr && !options.all_logits && last_block) {
            const auto t0 = Clock::now();
            auto token = head_argmax(x.data() + (n - 1) * hidden, positions[n - 1]);
            times_.head_seconds += seconds_since(t0);
            if (!token) {
                session.rewind(start);
                return tl::unexpected(token.error());
            }
            *options.argmax_out = *token;
        } else if (options.all_logits || last_block) {
            const size_t first = options.all_logits ? 0 : n - 1;
            const size_t rows = n - first;
            const auto t0 = Clock::now();
            std::vector<float> out(rows * vocab);
            model_.head(Rows{x.data() + first * hidden, rows, hidden}, Rows{out.data(), rows, vocab});
            times_.head_seconds += seconds_since(t0);
            times_.head_rows_exact += rows * vocab;
            if (auto finite = check_finite(out, vocab, std::span<const int64_t>(positions).subspan(first), -1, "the head (logits)");
                !finite) {
                session.rewind(start);
                return tl::unexpected(finite.error());
            }
            logits.insert(logits.end(), out.begin(), out.end());
        }
    }
    if (options.hidden_out) {
        options.hidden_out->clear();
        for (auto& layer : hidden_states) options.hidden_out->insert(options.hidden_out->end(), layer.begin(), layer.end());
    }
    return logits;
}

Expected<int32_t> Pipeline::head_argmax(const float* normed, int64_t position) {
    const size_t vocab = model_.vocab_size();
    const int64_t where[1] = {position};
    const WeightView* weight = model_.head_weight();
    if (compact_head_ == nullptr || weight == nullptr) {
        std::vector<float> out(vocab);
        std::vector<float> row(normed, normed + model_.hidden_size());
        model_.head(Rows{row.data(), 1, row.size()}, Rows{out.data(), 1, vocab});
        times_.head_rows_exact += vocab;
        STORMO_TRY(check_finite(out, vocab, where, -1, "the head (logits)"));
        return argmax(out);
    }
    STORMO_TRY_ASSIGN(const BoundedArgmax pick, bounded_argmax(*compact_head_, *weight, head_compute_, normed));
    ++times_.bounded_head_steps;
    times_.bounded_head_exact_rows += pick.exact_rows;
    times_.head_rows_exact += pick.exact_rows;
    if (!pick.finite) {
        // The full head's logits would hold the same non-finite value: the same error.
        const std::vector<float> poisoned(1, std::numeric_limits<float>::quiet_NaN());
        STORMO_TRY(check_finite(poisoned, 1, where, -1, "the head (logits)"));
    }
    return pick.token;
}

Expected<std::vector<int32_t>> Pipeline::rows_argmax(std::vector<float>& x, std::span<const int64_t> positions) {
    const size_t hidden = model_.hidden_size();
    const size_t vocab = model_.vocab_size();
    const size_t n = positions.size();
    const auto t0 = Clock::now();
    std::vector<int32_t> tokens;
    if (n == 1) {
        STORMO_TRY_ASSIGN(const int32_t token, head_argmax(x.data(), positions[0]));
        tokens.push_back(token);
    } else if (auto picks = bounded_rows_argmax(x.data(), positions)) {
        STORMO_TRY_ASSIGN(tokens, std::move(*picks));
    } else {
        // Past the bounded head's rows (or without a compact copy) one read of the full head
        // serves every row; its argmax is the token the bound gives.
        std::vector<float> out(n * vocab);
        model_.head(Rows{x.data(), n, hidden}, Rows{out.data(), n, vocab});
        times_.head_rows_exact += n * vocab;
        STORMO_TRY(check_finite(out, vocab, positions, -1, "the head (logits)"));
        for (size_t i = 0; i < n; ++i) tokens.push_back(argmax(std::span<const float>(out.data() + i * vocab, vocab)));
    }
    times_.head_seconds += seconds_since(t0);
    return tokens;
}

std::optional<Expected<std::vector<int32_t>>> Pipeline::bounded_rows_argmax(const float* rows,
                                                                          std::span<const int64_t> positions) {
    const WeightView* weight = model_.head_weight();
    const size_t n = positions.size();
    if (compact_head_ == nullptr || weight == nullptr || n > kBoundedHeadRowsMax) return std::nullopt;
    auto picks = bounded_argmax_rows(*compact_head_, *weight, head_compute_, rows, n);
    if (!picks) return tl::unexpected(picks.error());
    std::vector<int32_t> tokens;
    ++times_.bounded_head_steps;
    for (size_t i = 0; i < n; ++i) {
        const BoundedArgmax& pick = (*picks)[i];
        times_.bounded_head_exact_rows += pick.exact_rows;
        times_.head_rows_exact += pick.exact_rows;
        if (!pick.finite) {
            // The full head's logits would hold the same non-finite value: the same error.
            const std::vector<float> poisoned(1, std::numeric_limits<float>::quiet_NaN());
            const int64_t where[1] = {positions[i]};
            if (auto finite = check_finite(poisoned, 1, where, -1, "the head (logits)"); !finite)
                return tl::unexpected(finite.error());
        }
        tokens.push_back(pick.token);
    }
    return tokens;
}

// A sliding layer's K/V at position q depends, through the layers below it, on keys back to
// q - window + 1, and theirs on keys further back, so once a ring lost rows the next query needs
// nothing shorter than recomputing every position from 0 is exact. Full-attention rows are
// rewritten with the same bits (blocks of any size give the bits of token-by-token).
Expected<void> Pipeline::replay(Session& session, size_t block) {
    const std::span<const int32_t> history = session.tokens();
    const ForwardOptions quiet;  // no logits, tracer or hidden states
    std::vector<float> x;
    std::vector<int64_t> positions;
    for (size_t begin = 0; begin < history.size(); begin += block) {
        const size_t n = std::min(block, history.size() - begin);
        positions.resize(n);
        for (size_t i = 0; i < n; ++i) positions[i] = static_cast<int64_t>(begin + i);
        session.will_write(begin, begin + n);
        // On failure the session stays at its position and still needs the replay.
        const BlockPart part[1] = {{&session, history.subspan(begin, n)}};
        STORMO_TRY(run_block(part, positions, quiet, x, nullptr, Recording::off));
    }
    session.replayed();
    ++times_.replays;
    times_.replayed_positions += history.size();
    return {};
}

Expected<void> Pipeline::forward_batch(std::span<SequenceStep> steps) {
    if (steps.empty()) return fail(ErrorKind::invalid_argument, "a batched step of no sequences");
    for (size_t i = 0; i < steps.size(); ++i) {
        const SequenceStep& step = steps[i];
        // Named only on failure: this runs every decode step.
        const auto which = [i] { return "sequence " + std::to_string(i) + " of the step"; };
        if (step.session == nullptr) return fail(ErrorKind::internal, which() + " has no session");
        for (size_t j = 0; j < i; ++j)
            if (steps[j].session == step.session) return fail(ErrorKind::internal, which() + " shares its session with another");
        const Session& session = *step.session;
        STORMO_TRY(check_step(session, step.tokens, model_.vocab_size()));
        if (step.tokens.size() > session.max_block())
            return fail(ErrorKind::internal, which() + " has " + std::to_string(step.tokens.size()) +
                                                 " tokens, more than its session's block of " +
                                                 std::to_string(session.max_block()));
    }
    for (SequenceStep& step : steps)
        if (step.session->needs_replay()) STORMO_TRY(replay(*step.session, step.session->max_block()));

    std::vector<BlockPart> parts;
    std::vector<size_t> starts;
    std::vector<int64_t> positions;
    for (SequenceStep& step : steps) {
        Session& session = *step.session;
        parts.push_back({&session, step.tokens});
        starts.push_back(session.position());
        for (size_t i = 0; i < step.tokens.size(); ++i) positions.push_back(static_cast<int64_t>(session.position() + i));
        session.will_write(session.position(), session.position() + step.tokens.size());
    }
    auto rewind_all = [&] {
        for (size_t i = 0; i < steps.size(); ++i) steps[i].session->rewind(starts[i]);
    };
    std::vector<float> x;
    BlockRoutes routes;
    block_routes_ = &routes;
    auto ran = run_block(parts, positions, ForwardOptions{}, x, nullptr, Recording::on);
    block_routes_ = nullptr;
    if (!ran) {
        rewind_all();
        return tl::unexpected(ran.error());
    }
    size_t end = 0;
    for (SequenceStep& step : steps) {
        step.session->advance(step.tokens);
        end += step.tokens.size();
        step.session->set_routed_experts(experts_of_rows(routes, end, step.tokens.size()));
    }
    if (auto head = batch_head(steps, x, positions); !head) {
        rewind_all();
        return tl::unexpected(head.error());
    }
    return {};
}

std::vector<std::vector<int32_t>> Pipeline::experts_of_rows(const BlockRoutes& routes, size_t end, size_t rows) {
    const size_t first = end - std::min(rows, Session::kRoutedRows);
    std::vector<std::vector<int32_t>> out(routes.experts.size());
    for (size_t l = 0; l < routes.experts.size(); ++l) {
        const size_t k = routes.top_k[l];
        if (k == 0) continue;
        std::vector<int32_t>& chosen = out[l];
        chosen.assign(routes.experts[l].begin() + static_cast<ptrdiff_t>(first * k),
                      routes.experts[l].begin() + static_cast<ptrdiff_t>(end * k));
        std::sort(chosen.begin(), chosen.end());
        chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    }
    return out;
}

// Greedy steps read the head by bound (one row of one sequence's decode, or up to
// kBoundedHeadRowsMax rows of a verify block or a batch, whose cheap passes share one read of the
// compact copy); past that, or when some step wants logits, the full head is read once for all
// rows, and its argmax is the token the bound gives.
Expected<void> Pipeline::batch_head(std::span<SequenceStep> steps, const std::vector<float>& x,
                                    std::span<const int64_t> positions) {
    using Want = SequenceStep::Want;
    const size_t hidden = model_.hidden_size();
    const size_t vocab = model_.vocab_size();
    std::vector<size_t> rows;  // the rows in x whose logits some step wants, in order
    std::vector<size_t> first_row(steps.size(), 0);  // per step: its first entry in `rows`
    size_t end = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        const size_t n = steps[i].tokens.size();
        end += n;
        first_row[i] = rows.size();
        if (steps[i].want_hidden) steps[i].hidden.assign(x.begin() + static_cast<ptrdiff_t>((end - n) * hidden),
                                                         x.begin() + static_cast<ptrdiff_t>(end * hidden));
        if (steps[i].want == Want::nothing) continue;
        const bool every_row = steps[i].want == Want::all_logits || steps[i].want == Want::all_argmax;
        for (size_t r = every_row ? end - n : end - 1; r < end; ++r) rows.push_back(r);
    }
    if (rows.empty()) return {};
    const auto t0 = Clock::now();
    if (rows.size() == 1) {
        for (size_t i = 0; i < steps.size(); ++i) {
            SequenceStep& step = steps[i];
            if (step.want != Want::last_argmax && step.want != Want::all_argmax) continue;
            STORMO_TRY_ASSIGN(step.argmax, head_argmax(x.data() + rows[0] * hidden, positions[rows[0]]));
            times_.head_seconds += seconds_since(t0);
            if (step.want == Want::all_argmax) step.argmaxes.assign(1, step.argmax);
            return {};
        }
    }
    std::vector<float> gathered(rows.size() * hidden);
    std::vector<int64_t> where(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        std::copy_n(x.data() + rows[i] * hidden, hidden, gathered.data() + i * hidden);
        where[i] = positions[rows[i]];
    }
    const bool argmax_only = std::ranges::all_of(steps, [](const SequenceStep& s) {
        return s.want == Want::nothing || s.want == Want::last_argmax || s.want == Want::all_argmax;
    });
    if (argmax_only) {
        if (auto picks = bounded_rows_argmax(gathered.data(), where)) {
            STORMO_TRY_ASSIGN(const std::vector<int32_t> tokens, std::move(*picks));
            times_.head_seconds += seconds_since(t0);
            for (size_t i = 0; i < steps.size(); ++i) {
                SequenceStep& step = steps[i];
                if (step.want == Want::nothing) continue;
                const size_t count = step.want == Want::all_argmax ? step.tokens.size() : 1;
                step.argmaxes.assign(tokens.begin() + static_cast<ptrdiff_t>(first_row[i]),
                                     tokens.begin() + static_cast<ptrdiff_t>(first_row[i] + count));
                step.argmax = step.argmaxes.back();
                if (step.want == Want::last_argmax) step.argmaxes.clear();
            }
            return {};
        }
    }
    std::vector<float> out(rows.size() * vocab);
    model_.head(Rows{gathered.data(), rows.size(), hidden}, Rows{out.data(), rows.size(), vocab});
    times_.head_seconds += seconds_since(t0);
    times_.head_rows_exact += rows.size() * vocab;
    STORMO_TRY(check_finite(out, vocab, where, -1, "the head (logits)"));
    for (size_t i = 0; i < steps.size(); ++i) {
        SequenceStep& step = steps[i];
        if (step.want == Want::nothing) continue;
        const size_t count = step.want == Want::all_logits || step.want == Want::all_argmax ? step.tokens.size() : 1;
        const float* first = out.data() + first_row[i] * vocab;
        switch (step.want) {
            case Want::last_logits:
            case Want::all_logits: step.logits.assign(first, first + count * vocab); break;
            case Want::last_argmax:
            case Want::all_argmax:
                step.argmaxes.clear();
                for (size_t r = 0; r < count; ++r) step.argmaxes.push_back(argmax(std::span<const float>(first + r * vocab, vocab)));
                step.argmax = step.argmaxes.back();
                if (step.want == Want::last_argmax) step.argmaxes.clear();
                break;
            case Want::nothing: break;
        }
    }
    return {};
}

void Pipeline::override_rows(std::span<const BlockPart> parts, std::span<const int64_t> positions) {
    route_rows_.clear();
    for (const BlockPart& part : parts) {
        const std::span<const int32_t> held = part.session->tokens();
        const int32_t first = !held.empty() ? held.front() : part.tokens.empty() ? 0 : part.tokens.front();
        for (size_t i = 0; i < part.tokens.size(); ++i) route_rows_.push_back({first, positions[route_rows_.size()]});
    }
}

Expected<void> Pipeline::run_block(std::span<const BlockPart> parts, std::span<const int64_t> positions,
                                   const ForwardOptions& options, std::vector<float>& x,
                                   std::vector<std::vector<float>>* hidden, Recording recording,
                                   std::span<const float> input, std::vector<float>* pre_norm) {
    std::vector<int32_t> joined;
    std::span<const int32_t> tokens = parts.front().tokens;
    if (parts.size() > 1) {
        for (const BlockPart& part : parts) joined.insert(joined.end(), part.tokens.begin(), part.tokens.end());
        tokens = joined;
    }
    const size_t n = tokens.size();
    const size_t width = model_.hidden_size();
    const StepContext ctx{positions, options.tracer};
    if (route_override_) override_rows(parts, positions);
    if (input.empty()) {
        x.assign(n * width, 0.0f);
        STORMO_TRY(model_.embed(tokens, rows_of(x, n, width)));
    } else {
        x.assign(input.begin(), input.end());
    }
    auto record = [&](const char* name, int layer, const std::vector<float>& v) {
        if (options.tracer && options.tracer->wants(layer)) options.tracer->record(name, layer, v.data(), n, width, positions);
    };
    record("embedding", -1, x);
    STORMO_TRY(check_finite(x, width, positions, -1, "the embedding"));
    if (hidden) (*hidden)[0].insert((*hidden)[0].end(), x.begin(), x.end());
    std::vector<SequenceKv> block_kv(parts.size());
    auto kv_of_layer = [&](int layer) {
        size_t first = 0;
        for (size_t i = 0; i < parts.size(); ++i) {
            block_kv[i] = SequenceKv{first, parts[i].tokens.size(), parts[i].session->kv(layer)};
            first += parts[i].tokens.size();
        }
        return BlockKv(block_kv);
    };

    std::vector<float> normed(n * width), delta(n * width);
    for (int layer = options.first_layer; layer < model_.n_layers(); ++layer) {
        const LayerPlan& plan = model_.layer_plan(layer);
        auto t0 = Clock::now();
        model_.norm(Model::NormSite::attention, layer, rows_of(x, n, width), rows_of(normed, n, width));
        if (auto a = model_.attention(layer, ctx, rows_of(normed, n, width), kv_of_layer(layer), rows_of(delta, n, width)); !a)
            return tl::unexpected(a.error());
        times_.attention_seconds += seconds_since(t0);
        add_into(x, delta);
        record("post_attention_residual", layer, x);
        STORMO_TRY(check_finite(x, width, positions, layer, "attention"));

        t0 = Clock::now();
        model_.norm(Model::NormSite::ffn, layer, rows_of(x, n, width), rows_of(normed, n, width));
        if (plan.ffn == FfnKind::moe) {
            if (auto m = moe_stage(layer, ctx, rows_of(normed, n, width), rows_of(x, n, width), rows_of(delta, n, width),
                                   recording);
                !m)
                return tl::unexpected(m.error());
        } else {
            if (auto d = model_.dense_ffn(layer, rows_of(normed, n, width), rows_of(delta, n, width)); !d)
                return tl::unexpected(d.error());
        }
        times_.moe_seconds += seconds_since(t0);
        add_into(x, delta);
        record("layer_out", layer, x);
        STORMO_TRY(check_finite(x, width, positions, layer, plan.ffn == FfnKind::moe ? "MoE" : "feed-forward"));
        if (hidden && layer + 1 < model_.n_layers()) {
            auto& h = (*hidden)[static_cast<size_t>(layer) + 1];
            h.insert(h.end(), x.begin(), x.end());
        }
    }
    model_.norm(Model::NormSite::final, 0, rows_of(x, n, width), rows_of(normed, n, width));
    x.swap(normed);
    if (pre_norm) pre_norm->assign(normed.begin(), normed.end());
    record("final_norm", -1, x);
    STORMO_TRY(check_finite(x, width, positions, -1, "the final norm"));
    if (hidden) hidden->back().insert(hidden->back().end(), x.begin(), x.end());
    return {};
}

std::vector<int32_t> Pipeline::predict_next(int layer, const StepContext& ctx, const Rows& residual,
                                            int& next_layer) const {
    next_layer = -1;
    for (int l = layer + 1; l < model_.n_layers(); ++l)
        if (model_.layer_plan(l).ffn == FfnKind::moe) {
            next_layer = l;
            break;
        }
    if (next_layer < 0) return {};
    if (route_override_) return route_override_->predict(next_layer);
    std::vector<float> normed(residual.n * residual.width);
    const Rows normed_rows{normed.data(), residual.n, residual.width};
    model_.norm(Model::NormSite::ffn, next_layer, residual, normed_rows);
    const StepContext quiet{ctx.positions, nullptr};  // a prediction is not an intermediate to dump
    const Routing guess = model_.route(next_layer, quiet, normed_rows);
    std::vector<char> seen(static_cast<size_t>(model_.layer_plan(next_layer).n_experts), 0);
    for (int32_t e : guess.experts)
        if (e >= 0 && static_cast<size_t>(e) < seen.size()) seen[static_cast<size_t>(e)] = 1;
    std::vector<int32_t> experts;
    for (size_t e = 0; e < seen.size(); ++e)
        if (seen[e]) experts.push_back(static_cast<int32_t>(e));
    return experts;
}

// Predicts only when someone reads ahead: this store when it streams, or owners that stream.
Pipeline::NextLayerGuess Pipeline::guess_next_layer(int layer, const StepContext& ctx, const Rows& residual) {
    NextLayerGuess next;
    const bool hints = remote_ != nullptr && remote_->takes_hints();
    if (!settings_.prefetch || !(store_.streams() || hints)) return next;
    std::vector<int32_t> guess = predict_next(layer, ctx, residual, next.layer);
    if (next.layer < 0) return next;
    std::vector<int32_t> elsewhere;
    for (int32_t e : guess) (remote_ == nullptr || remote_->holds(next.layer, e) ? next.experts : elsewhere).push_back(e);
    if (hints && !elsewhere.empty()) {
        // A hint that cannot go out only loses its head start; the layer's own exchange reports a lost rank.
        (void)remote_->prefetch(next.layer, elsewhere);
    }
    if (predicted_.size() < static_cast<size_t>(model_.n_layers())) predicted_.resize(static_cast<size_t>(model_.n_layers()));
    predicted_[static_cast<size_t>(next.layer)] = std::move(guess);
    return next;
}

Expected<void> Pipeline::moe_stage(int layer, const StepContext& ctx, const Rows& normed, const Rows& residual, Rows out,
                                   Recording recording) {
    const LayerPlan& plan = model_.layer_plan(layer);
    const size_t n = normed.n;
    const size_t width = normed.width;
    Routing routing = model_.route(layer, ctx, normed);
    const size_t k = routing.top_k;
    if (routing.experts.size() != n * k || routing.weights.size() != n * k)
        return fail(ErrorKind::internal, "layer " + std::to_string(layer) + ": router returned a malformed routing");
    if (route_override_) {
        routing.experts = route_override_->route(layer, route_rows_, k, plan.n_experts);
        std::fill(routing.weights.begin(), routing.weights.end(), 1.0f / static_cast<float>(k));
        if (routing.experts.size() != n * k)
            return fail(ErrorKind::internal, "layer " + std::to_string(layer) + ": the routing override gave a malformed routing");
    }

    // Plan: the union of chosen experts, each with the (row, slot) pairs that chose it.
    std::vector<std::vector<size_t>> users(static_cast<size_t>(plan.n_experts));
    for (size_t i = 0; i < n * k; ++i) {
        const int32_t e = routing.experts[i];
        if (e < 0 || e >= plan.n_experts)
            return fail(ErrorKind::internal, "layer " + std::to_string(layer) + ": router chose expert " + std::to_string(e));
        users[static_cast<size_t>(e)].push_back(i);
    }
    std::vector<int32_t> chosen;
    for (size_t e = 0; e < users.size(); ++e)
        if (!users[e].empty()) chosen.push_back(static_cast<int32_t>(e));
    const bool record = recording == Recording::on;
    if (route_trace_ && record) {
        const bool guessed = static_cast<size_t>(layer) < predicted_.size();
        route_trace_->push_back(RouteStep{layer, chosen, static_cast<uint32_t>(n),
                                          guessed ? predicted_[static_cast<size_t>(layer)] : std::vector<int32_t>{}});
    }
    if (block_routes_ != nullptr && record) {
        block_routes_->experts.resize(static_cast<size_t>(model_.n_layers()));
        block_routes_->top_k.resize(static_cast<size_t>(model_.n_layers()));
        block_routes_->experts[static_cast<size_t>(layer)] = routing.experts;
        block_routes_->top_k[static_cast<size_t>(layer)] = k;
    }
    if (static_cast<size_t>(layer) < predicted_.size() && !predicted_[static_cast<size_t>(layer)].empty()) {
        const auto& guess = predicted_[static_cast<size_t>(layer)];
        if (record) {
            for (int32_t e : chosen)
                if (std::binary_search(guess.begin(), guess.end(), e)) ++times_.predicted_chosen;
            times_.chosen += chosen.size();
        }
        predicted_[static_cast<size_t>(layer)].clear();
    }

    std::vector<float> contributions(n * k * width, 0.0f);
    // Experts other processes hold go out first, so they compute while this one computes its own.
    std::vector<int32_t> elsewhere;
    if (remote_ != nullptr) {
        std::vector<int32_t> here;
        for (int32_t e : chosen) (remote_->holds(layer, e) ? here : elsewhere).push_back(e);
        chosen = std::move(here);
    }
    const RemoteExpertWork remote_work{layer, k, elsewhere, &users, &normed};
    if (!elsewhere.empty()) STORMO_TRY(remote_->send(remote_work));
    if (chosen.empty()) {
        // No expert of its own this layer: the next one's are guessed (and read ahead) at once.
        const NextLayerGuess next = guess_next_layer(layer, ctx, residual);
        if (next.layer >= 0 && store_.streams()) store_.prefetch(next.layer, next.experts, store_.max_batch());
    }
    if (auto c = compute_experts(layer, ctx, normed, routing, chosen, users, residual, contributions); !c)
        return tl::unexpected(c.error());
    if (!elsewhere.empty()) STORMO_TRY(remote_->collect(remote_work, contributions));

    // Reduce per row in the router's canonical order.
    for (size_t r = 0; r < n; ++r) {
        float* dst = out.row(r);
        std::fill_n(dst, width, 0.0f);
        for (size_t s = 0; s < k; ++s) {
            const float w = routing.weights[r * k + s];
            const float* src = contributions.data() + (r * k + s) * width;
            for (size_t i = 0; i < width; ++i) dst[i] += w * src[i];
        }
    }
    if (plan.shared_experts) {
        std::vector<float> shared(n * width);
        STORMO_TRY(model_.dense_ffn(layer, normed, Rows{shared.data(), n, width}));
        for (size_t i = 0; i < n * width; ++i) out.data[i] += shared[i];
    }
    if (ctx.tracer && ctx.tracer->wants(layer)) ctx.tracer->record("moe_out", layer, out.data, n, width, ctx.positions);
    return {};
}

std::optional<ExpertSchedule> Pipeline::expert_parallel(std::span<const int32_t> group,
                                                        const std::vector<std::vector<size_t>>& users, bool tracing) const {
    // Tracing records from one thread; a streaming store's experts arrive one by one, and computing
    // each as it arrives (async_compute) hides the reads better than waiting for the whole wave.
    if (expert_pool_ == nullptr || expert_pool_->size() < 2 || group.size() < 2 || tracing || store_.streams())
        return std::nullopt;
    ExpertSchedule schedule = schedule_experts(rows_per_expert(group, users), expert_pool_->size());
    if (!schedule.balanced) return std::nullopt;
    return schedule;
}

// One expert per chunk of the pool; each expert's matmuls, called from inside the pool's job, run
// inline on the thread that holds it (a nested parallel_for runs inline). Every expert writes only
// its own rows' slots of `contributions`; errors are reported in the wave's order.
Expected<void> Pipeline::run_experts_in_parallel(int layer, ExpertBatch& batch, std::span<const int32_t> group,
                                                 const ExpertSchedule& schedule, const std::vector<std::vector<size_t>>& users,
                                                 const Rows& normed, size_t k, std::vector<float>& contributions) {
    const size_t width = normed.width;
    std::vector<Expected<void>> results(group.size());
    expert_pool_->parallel_for(group.size(), 1, [&](size_t begin, size_t end) {
        std::vector<float> in, result;
        for (size_t j = begin; j < end; ++j) {
            const size_t i = schedule.order[j];
            const auto& rows = users[static_cast<size_t>(group[i])];
            in.resize(rows.size() * width);
            result.resize(rows.size() * width);
            for (size_t r = 0; r < rows.size(); ++r) std::copy_n(normed.row(rows[r] / k), width, in.data() + r * width);
            results[i] = model_.expert_ffn(layer, batch.view(i), Rows{in.data(), rows.size(), width},
                                           Rows{result.data(), rows.size(), width});
            if (!results[i]) continue;
            for (size_t r = 0; r < rows.size(); ++r)
                std::copy_n(result.data() + r * width, width, contributions.data() + rows[r] * width);
        }
    });
    for (auto& r : results) STORMO_TRY(r);
    return {};
}

// Runs each chosen expert over the rows that chose it, writing per-(row, slot) outputs. When the
// union is larger than the store can pin at once it goes in waves; the order experts are computed
// in never matters, since each writes only its own rows' slots.
Expected<void> Pipeline::compute_experts(int layer, const StepContext& ctx, const Rows& normed, const Routing& routing,
                                         const std::vector<int32_t>& chosen, const std::vector<std::vector<size_t>>& users,
                                         const Rows& residual, std::vector<float>& contributions) {
    const size_t width = normed.width;
    const size_t k = routing.top_k;
    const size_t wave = std::max<size_t>(1, store_.max_batch());
    const bool tracing = ctx.tracer && ctx.tracer->wants(layer);
    std::vector<float> in, result;
    std::vector<int64_t> user_positions;
    auto run_expert = [&](const ExpertView& view, int32_t expert) -> Expected<void> {
        const auto& rows = users[static_cast<size_t>(expert)];
        in.resize(rows.size() * width);
        result.resize(rows.size() * width);
        for (size_t r = 0; r < rows.size(); ++r) std::copy_n(normed.row(rows[r] / k), width, in.data() + r * width);
        if (auto e = model_.expert_ffn(layer, view, Rows{in.data(), rows.size(), width}, Rows{result.data(), rows.size(), width}); !e)
            return tl::unexpected(e.error());
        for (size_t r = 0; r < rows.size(); ++r)
            std::copy_n(result.data() + r * width, width, contributions.data() + rows[r] * width);
        if (tracing) {
            user_positions.clear();
            for (size_t r : rows) user_positions.push_back(ctx.positions[r / k]);
            ctx.tracer->record("expert_" + std::to_string(expert) + "_out", layer, result.data(), rows.size(), width,
                               user_positions);
        }
        return {};
    };

    for (size_t begin = 0; begin < chosen.size(); begin += wave) {
        const size_t count = std::min(wave, chosen.size() - begin);
        const std::span<const int32_t> group(chosen.data() + begin, count);
        STORMO_TRY_ASSIGN(auto batch, store_.acquire(layer, group));
        // This layer's misses are queued; now start on the next layer's likely experts.
        if (begin == 0) {
            const NextLayerGuess next = guess_next_layer(layer, ctx, residual);
            if (next.layer >= 0 && store_.streams()) {
                const size_t free_slots = store_.max_batch() > count ? store_.max_batch() - count : 0;
                store_.prefetch(next.layer, next.experts, free_slots);
            }
        }
        if (const auto schedule = expert_parallel(group, users, tracing)) {
            for (size_t i = 0; i < count; ++i) STORMO_TRY(batch->next());
            STORMO_TRY(run_experts_in_parallel(layer, *batch, group, *schedule, users, normed, k, contributions));
        } else if (settings_.async_compute) {
            for (size_t i = 0; i < count; ++i) {
                STORMO_TRY_ASSIGN(auto ready, batch->next());
                STORMO_TRY(run_expert(batch->view(ready), group[ready]));
            }
        } else {
            for (size_t i = 0; i < count; ++i)
                STORMO_TRY(batch->next());
            for (size_t i = 0; i < count; ++i)
                STORMO_TRY(run_expert(batch->view(i), group[i]));
        }
    }
    return {};
}

}  // namespace stormo

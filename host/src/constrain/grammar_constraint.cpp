#include "constrain/grammar_constraint.hpp"

namespace stormo::constrain {
namespace {

// Masks remembered per grammar state; past this many they are dropped and made again (a deep or
// long answer meets new states, and a mask of a 200k vocabulary is 25 KB).
constexpr size_t kMaxRememberedMasks = 128;

}  // namespace

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocabulary)
    : vocabulary_(std::move(vocabulary)), matcher_(std::move(grammar)), state_(matcher_.start()) {}

std::vector<uint64_t> GrammarConstraint::compute_mask(GrammarMatcher::State state) {
    std::vector<uint64_t> bits((vocabulary_->vocab_size() + 63) / 64, 0);
    const auto& nodes = vocabulary_->nodes();
    const auto& ids = vocabulary_->token_ids();
    std::vector<GrammarMatcher::State> at_depth(vocabulary_->max_depth() + 1, GrammarMatcher::kDead);
    at_depth[0] = state;
    for (size_t i = 0; i < nodes.size();) {
        const TokenTrie::Node& node = nodes[i];
        const GrammarMatcher::State next = matcher_.step(at_depth[node.depth - 1], node.byte);
        if (next == GrammarMatcher::kDead) {
            i = node.end;  // no token starting with these bytes can come
            continue;
        }
        at_depth[node.depth] = next;
        for (uint32_t t = node.tokens_begin; t < node.tokens_end; ++t) {
            const auto id = static_cast<size_t>(ids[t]);
            bits[id >> 6] |= uint64_t{1} << (id & 63);
        }
        ++i;
    }
    return bits;
}

const std::vector<uint64_t>& GrammarConstraint::allowed() {
    if (auto it = masks_.find(state_); it != masks_.end()) return it->second;
    if (masks_.size() >= kMaxRememberedMasks) masks_.clear();
    return masks_.emplace(state_, compute_mask(state_)).first->second;
}

Expected<void> GrammarConstraint::accept(int32_t token) {
    const std::string_view bytes = vocabulary_->bytes(token);
    const GrammarMatcher::State next = bytes.empty() ? GrammarMatcher::kDead : matcher_.walk(state_, bytes);
    if (next == GrammarMatcher::kDead)
        return fail(ErrorKind::internal, "token " + std::to_string(token) + " does not continue the grammar after " +
                                             std::to_string(bytes_accepted_) + " bytes");
    state_ = next;
    bytes_accepted_ += bytes.size();
    return {};
}

std::string GrammarConstraint::forced_bytes(size_t limit) {
    std::string out;
    GrammarMatcher::State s = state_;
    while (out.size() < limit) {
        const std::optional<uint8_t> b = matcher_.only_byte(s);
        if (!b) break;
        out += static_cast<char>(*b);
        s = matcher_.step(s, *b);
    }
    return out;
}

std::vector<int32_t> GrammarConstraint::forced_tokens(size_t limit) {
    const std::string forced = forced_bytes(vocabulary_->max_depth() * (limit + 1));
    const auto& nodes = vocabulary_->nodes();
    const auto& ids = vocabulary_->token_ids();
    std::vector<int32_t> out;
    size_t at = 0;
    while (out.size() < limit && at < forced.size()) {
        // Down the trie along the forced bytes, remembering the deepest node holding a token.
        std::optional<int32_t> best;
        size_t best_length = 0;
        size_t i = 0, end = nodes.size();
        for (size_t depth = 0; at + depth < forced.size(); ++depth) {
            const auto byte = static_cast<uint8_t>(forced[at + depth]);
            while (i < end && nodes[i].byte != byte) i = nodes[i].end;  // siblings, subtree by subtree
            if (i >= end) break;
            if (nodes[i].tokens_begin < nodes[i].tokens_end) {
                best = ids[nodes[i].tokens_begin];
                best_length = depth + 1;
            }
            end = nodes[i].end;
            ++i;
        }
        if (!best) break;
        out.push_back(*best);
        at += best_length;
    }
    return out;
}

}  // namespace stormo::constrain

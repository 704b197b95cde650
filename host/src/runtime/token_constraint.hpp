#pragma once
// What generation asks of a constraint on its tokens (structured output: a grammar, a JSON
// schema): which tokens may come next, the token chosen, and whether the constrained text is
// finished. The sampler then draws only among the tokens allowed, greedy or seeded alike.
#include <cstdint>
#include <span>
#include <vector>

#include "stormo/error.hpp"

namespace stormo {

class TokenConstraint {
public:
    virtual ~TokenConstraint() = default;
    // Sets the logit of every token that may not come next to -infinity. An error when no token
    // may (the vocabulary cannot continue the text the constraint demands).
    virtual Expected<void> mask(std::span<float> logits) = 0;
    // The token generation chose (one the last mask allowed).
    virtual Expected<void> accept(int32_t token) = 0;
    // Nothing may follow: generation ends here, as a stop.
    virtual bool complete() const = 0;
    // The tokens that must come next whatever the model says (the constraint admits exactly one
    // continuation), at most `limit`: drafts a verifier can check for free. Empty when the next
    // token is a choice.
    virtual std::vector<int32_t> forced_tokens(size_t limit) = 0;
};

}  // namespace stormo

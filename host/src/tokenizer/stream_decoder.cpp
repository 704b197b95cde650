// Streaming decode: bytes are released as soon as they end on a character boundary (or on an
// invalid subpart, which can never become valid), so each piece renders exactly as the same bytes
// do inside a whole decode.
#include "tokenizer/tokenizer.hpp"
#include "util/utf8.hpp"

namespace stormo::text {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special) : tokenizer_(&tokenizer), skip_special_(skip_special) {}

Expected<std::string> StreamDecoder::push(int32_t id) {
    // A model's vocabulary may be padded past the tokenizer's ids (gpt-oss: 201088 embedding rows,
    // 200019 tokens); a padding row has no text, and the reference decoder skips such ids too.
    if (id >= 0 && static_cast<size_t>(id) >= tokenizer_->size()) return std::string();
    STORMO_TRY_ASSIGN(auto bytes, tokenizer_->token_bytes(id, skip_special_));
    pending_ += bytes;
    const size_t ready = pending_.size() - utf8::incomplete_tail(pending_);
    std::string text = utf8::lossy(std::string_view(pending_).substr(0, ready));
    pending_.erase(0, ready);
    return text;
}

std::string StreamDecoder::finish() {
    std::string text = utf8::lossy(pending_);
    pending_.clear();
    return text;
}

}  // namespace stormo::text

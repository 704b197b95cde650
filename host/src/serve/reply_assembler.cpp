#include "serve/reply_assembler.hpp"

namespace stormo::serve {

ReplyAssembler::ReplyAssembler(const text::Tokenizer& tokenizer, text::ReplyFormat format, Endpoint endpoint,
                               std::vector<std::string> stops)
    : decoder_(tokenizer, /*skip_special=*/true), stops_(std::move(stops)) {
    if (endpoint == Endpoint::chat) parser_.emplace(tokenizer, format);
}

void ReplyAssembler::deliver(text::ReplyPiece piece, std::vector<text::ReplyPiece>& out) {
    // Stop sequences end the answer; the reasoning before it is never cut.
    if (piece.kind == text::ReplyPiece::Kind::content) {
        if (stops_.matched()) return;
        piece.text = stops_.push(piece.text).text;
    }
    if (piece.text.empty()) return;
    (piece.kind == text::ReplyPiece::Kind::content ? content_ : reasoning_) += piece.text;
    out.push_back(std::move(piece));
}

Expected<std::vector<text::ReplyPiece>> ReplyAssembler::push(int32_t id) {
    std::vector<text::ReplyPiece> out;
    if (parser_) {
        STORMO_TRY_ASSIGN(std::vector<text::ReplyPiece> pieces, parser_->push(id));
        for (auto& piece : pieces) deliver(std::move(piece), out);
    } else {
        STORMO_TRY_ASSIGN(std::string text, decoder_.push(id));
        deliver({text::ReplyPiece::Kind::content, std::move(text)}, out);
    }
    return out;
}

std::vector<text::ReplyPiece> ReplyAssembler::finish() {
    std::vector<text::ReplyPiece> out;
    if (parser_) {
        for (auto& piece : parser_->finish()) deliver(std::move(piece), out);
    } else {
        deliver({text::ReplyPiece::Kind::content, decoder_.finish()}, out);
    }
    if (std::string rest = stops_.flush(); !rest.empty()) {
        content_ += rest;
        out.push_back({text::ReplyPiece::Kind::content, std::move(rest)});
    }
    return out;
}

std::vector<text::ToolCall> ReplyAssembler::tool_calls() const {
    return parser_ ? parser_->reply().tool_calls : std::vector<text::ToolCall>{};
}

}  // namespace stormo::serve

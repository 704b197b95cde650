#include "tokenizer/onig_regex.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/split_known.hpp"

namespace stormo::text {

namespace {

// Oniguruma keeps its encoding tables in library-wide state that must be set up once before the
// first compile; a function-local static does that once, thread-safely.
bool onig_ready() {
    static const bool ready = [] {
        OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
        return onig_initialize(encodings, 1) == ONIG_NORMAL;
    }();
    return ready;
}

std::string onig_message(int code, OnigErrorInfo* info) {
    OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
    const int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
    return std::string(reinterpret_cast<const char*>(buf), n > 0 ? static_cast<size_t>(n) : 0);
}

}  // namespace

Expected<OnigRegex> compile_onig(std::string_view pattern) {
    if (!onig_ready()) return fail(ErrorKind::internal, "Oniguruma failed to initialise");
    regex_t* regex = nullptr;
    OnigErrorInfo info{};
    const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
    const int rc = onig_new(&regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
    if (rc != ONIG_NORMAL) return fail(ErrorKind::format, "the regex does not compile: " + onig_message(rc, &info));
    return OnigRegex(regex);
}

struct SplitRegex::Impl {
    OnigRegex regex;
    std::unique_ptr<KnownSplitter> known;  // the same pieces in O(1) memory a character, when known
};

SplitRegex::SplitRegex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SplitRegex::SplitRegex(SplitRegex&&) noexcept = default;
SplitRegex& SplitRegex::operator=(SplitRegex&&) noexcept = default;
SplitRegex::~SplitRegex() = default;

Expected<SplitRegex> SplitRegex::compile(std::string_view pattern, const std::string& where) {
    auto regex = compile_onig(pattern);
    if (!regex) return fail(regex.error().kind, where + ": " + regex.error().message);
    auto impl = std::make_unique<Impl>();
    impl->regex = std::move(*regex);
    impl->known = KnownSplitter::recognize(pattern);
    return SplitRegex(std::move(impl));
}

void SplitRegex::split_isolated(std::string_view text, const std::function<void(std::string_view)>& piece) const {
    if (impl_->known && impl_->known->split(text, piece)) return;
    split_isolated_by_regex(text, piece);
}

bool SplitRegex::known_pattern() const { return impl_->known != nullptr; }

void SplitRegex::split_isolated_by_regex(std::string_view text, const std::function<void(std::string_view)>& piece) const {
    const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
    const auto* end = begin + text.size();
    OnigRegion* region = onig_region_new();
    size_t emitted = 0;  // text before this offset has been handed out
    size_t from = 0;     // where the next search starts
    while (from <= text.size()) {
        const int at = onig_search(impl_->regex.get(), begin, end, begin + from, end, region, ONIG_OPTION_NONE);
        if (at < 0) break;  // ONIG_MISMATCH (or an error: the rest stays one piece)
        const auto m_begin = static_cast<size_t>(region->beg[0]);
        const auto m_end = static_cast<size_t>(region->end[0]);
        if (m_end == m_begin) {
            // An empty match splits nothing; step over one character so the search advances.
            if (m_begin >= text.size()) break;
            size_t step = 1;
            while (m_begin + step < text.size() && (static_cast<unsigned char>(text[m_begin + step]) & 0xC0) == 0x80) ++step;
            from = m_begin + step;
            continue;
        }
        if (m_begin > emitted) piece(text.substr(emitted, m_begin - emitted));
        piece(text.substr(m_begin, m_end - m_begin));
        emitted = from = m_end;
    }
    if (emitted < text.size()) piece(text.substr(emitted));
    onig_region_free(region, 1);
}

}  // namespace stormo::text

#pragma once
// Reading the tokenizer reference files (encode.json, decode.json, a demo model's eval.json) for
// the tokenizer tests. simdjson's DOM is kept alive by the parser the caller owns.
#include <simdjson.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace stormo::test {

inline const std::string kTokenizerData = STORMO_TOKENIZER_DATA_DIR;

// A reference tokenizer (gpt-oss, qwen3, deepseek-v3), loaded once per test process: each takes a noticeable
// fraction of a second. Tests run serially, so the cache needs no lock.
inline const text::Tokenizer& reference_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<text::Tokenizer>> loaded;
    auto& slot = loaded[name];
    if (!slot) {
        auto t = text::Tokenizer::load(kTokenizerData + "/" + name);
        if (!t) throw std::runtime_error(t.error().message);
        slot = std::make_unique<text::Tokenizer>(std::move(*t));
    }
    return *slot;
}

inline std::vector<int32_t> json_ids(simdjson::dom::element e) {
    std::vector<int32_t> ids;
    const simdjson::dom::array list = e.get_array().value();  // named: a range-for over value() would dangle
    for (simdjson::dom::element v : list) ids.push_back(static_cast<int32_t>(v.get_int64().value()));
    return ids;
}

inline std::string json_text(simdjson::dom::element e) { return std::string(e.get_string().value()); }

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
    std::string s;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(ids[i]);
    }
    return s;
}

}  // namespace stormo::test

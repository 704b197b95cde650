// The pieces every family's GGUF mapping shares: see stormo/toolkit/gguf_mapping.hpp.
#include "stormo/toolkit/gguf_mapping.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "stormo/quote.hpp"

namespace stormo::toolkit::gguf {

namespace {

// The value of `key` as `convert` reads it; errors name the file and the key, and `want` the type.
template <class T, class Convert>
Expected<T> typed(const GgufView& file, std::string_view key, const char* want, Convert convert) {
    const GgufValue* v = file.value(key);
    if (v == nullptr) return fail(ErrorKind::missing, file.path() + ": key " + in_quotes(key) + " is missing");
    std::optional<T> x = convert(*v);
    if (!x) return fail(ErrorKind::format, file.path() + ": key " + in_quotes(key) + " must be " + want + ", found " + v->type_name());
    return *x;
}

}  // namespace

Expected<uint64_t> Keys::count(std::string_view key) const {
    return typed<uint64_t>(file_, key, "a non-negative integer", [](const GgufValue& v) { return v.as_uint(); });
}

Expected<double> Keys::number(std::string_view key) const {
    STORMO_TRY_ASSIGN(const double v, typed<double>(file_, key, "a number", [](const GgufValue& v) { return v.as_float(); }));
    // JSON has no NaN or infinity: the config made from the metadata would fail to parse without
    // naming the key.
    if (!std::isfinite(v)) return fail(ErrorKind::format, file_.path() + ": key " + in_quotes(key) + " must be a finite number, found " + std::to_string(v));
    return v;
}

Expected<bool> Keys::flag(std::string_view key) const {
    return typed<bool>(file_, key, "a bool", [](const GgufValue& v) { return v.as_bool(); });
}

Expected<std::string> Keys::text(std::string_view key) const {
    return typed<std::string>(file_, key, "a string", [](const GgufValue& v) -> std::optional<std::string> {
        if (auto s = v.as_string()) return std::string(*s);
        return std::nullopt;
    });
}

Expected<uint64_t> Keys::count_or(std::string_view key, uint64_t absent) const {
    return find(key) == nullptr ? Expected<uint64_t>(absent) : count(key);
}

Expected<double> Keys::number_or(std::string_view key, double absent) const {
    return find(key) == nullptr ? Expected<double>(absent) : number(key);
}

Expected<bool> Keys::flag_or(std::string_view key, bool absent) const {
    return find(key) == nullptr ? Expected<bool>(absent) : flag(key);
}

Error Keys::refuse(std::string_view key, const std::string& what, ErrorKind kind) const {
    return Error{kind, file_.path() + ": key " + in_quotes(arch_key(key)) + " " + what};
}

std::string blk(int layer, std::string_view name) { return "blk." + std::to_string(layer) + "." + std::string(name); }
std::string hf(int layer, std::string_view name) { return "model.layers." + std::to_string(layer) + "." + std::string(name); }

Expected<void> require_last_block(const GgufView& model, const Keys& k, uint64_t blocks, uint64_t layers) {
    if (layers == 0) return {};
    const bool indexable = layers - 1 <= static_cast<uint64_t>(std::numeric_limits<int>::max());
    const std::string last = "blk." + std::to_string(layers - 1) + ".attn_norm.weight";
    if (indexable && model.tensor(last) != nullptr) return {};
    return tl::unexpected(k.refuse("block_count", "is " + std::to_string(blocks) + ", but the file has no tensor " + in_quotes(last),
                                   ErrorKind::mismatch));
}

Expected<const GgufTensorInfo*> checked_ne(const GgufView& model, const std::string& name, const std::vector<uint64_t>& ne) {
    const GgufTensorInfo* t = model.tensor(name);
    if (t == nullptr) return fail(ErrorKind::missing, model.path() + ": tensor " + in_quotes(name) + " is missing");
    const GgufTensorInfo& info = *t;
    bool same = info.n_dims == ne.size();
    for (size_t d = 0; same && d < ne.size(); ++d) same = info.ne[d] == ne[d];
    if (!same) {
        auto dims = [](const uint64_t* v, size_t n) {
            std::string s = "[";
            for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
            return s + "]";
        };
        return fail(ErrorKind::mismatch, model.file_of(info) + ": tensor " + in_quotes(name) + ": has ne " +
                                             dims(info.ne.data(), info.n_dims) + ", the metadata needs " + dims(ne.data(), ne.size()));
    }
    return t;
}

namespace {

// A tensor already found and checked, as float32.
Expected<std::vector<float>> dequantize(const GgufView& model, const GgufTensorInfo& t) {
    const std::span<const std::byte> bytes = model.bytes(t);
    if (bytes.size() != t.nbytes) return fail(ErrorKind::internal, model.path() + ": tensor " + in_quotes(t.name) + " is not the file's");
    std::vector<float> values(static_cast<size_t>(t.elements));
    if (auto r = dequantize_gguf(t.type, bytes.data(), values.size(), values.data()); !r)
        return tl::unexpected(with_context(r.error(), model.file_of(t) + ": tensor " + in_quotes(t.name)));
    return values;
}

// Whether a family is handed the file's bytes of `t` (copy_tensor's rule), and as which dtype.
std::optional<DType> in_file_dtype(const GgufTensorInfo& t) {
    const std::optional<DType> dtype = gguf_dtype(t.type);
    if (!dtype || (t.n_dims < 2 && *dtype != DType::F32)) return std::nullopt;
    return dtype;
}

Shape row_major(const std::vector<uint64_t>& ne) {
    Shape shape;
    for (auto it = ne.rbegin(); it != ne.rend(); ++it) shape.push_back(static_cast<int64_t>(*it));
    return shape;
}

}  // namespace

Expected<std::vector<float>> dequantized(const GgufView& model, const std::string& name, std::vector<uint64_t> ne) {
    STORMO_TRY_ASSIGN(const GgufTensorInfo* t, checked_ne(model, name, ne));
    return dequantize(model, *t);
}

Expected<void> copy_tensor(const GgufView& model, MappedModel& m, const std::string& gguf_name, std::string hf_name,
                           std::vector<uint64_t> ne) {
    STORMO_TRY_ASSIGN(const GgufTensorInfo* t, checked_ne(model, gguf_name, ne));
    if (const std::optional<DType> dtype = in_file_dtype(*t)) {
        m.tensors.push_back({std::move(hf_name), row_major(ne), *dtype, t, 0, t->nbytes, {}});
        return {};
    }
    STORMO_TRY_ASSIGN(auto values, dequantize(model, *t));
    add_values(m, std::move(hf_name), row_major(ne), std::move(values));
    return {};
}

void add_values(MappedModel& m, std::string hf_name, Shape shape, std::vector<float> values) {
    m.tensors.push_back({std::move(hf_name), std::move(shape), DType::F32, nullptr, 0, 0, std::move(values)});
}

Expected<void> copy_ends(const GgufView& model, MappedModel& m, uint64_t hidden, uint64_t vocab) {
    STORMO_TRY(copy_tensor(model, m, "token_embd.weight", "model.embed_tokens.weight", {hidden, vocab}));
    STORMO_TRY(copy_tensor(model, m, "output_norm.weight", "model.norm.weight", {hidden}));
    if (model.tensor("output.weight") == nullptr) return {};
    return copy_tensor(model, m, "output.weight", "lm_head.weight", {hidden, vocab});
}

Expected<void> copy_layer_norms(const GgufView& model, MappedModel& m, int l, uint64_t hidden, std::string_view post_attention) {
    STORMO_TRY(copy_tensor(model, m, blk(l, "attn_norm.weight"), hf(l, "input_layernorm.weight"), {hidden}));
    return copy_tensor(model, m, blk(l, std::string(post_attention) + ".weight"), hf(l, "post_attention_layernorm.weight"), {hidden});
}

Expected<void> unstack_experts(const GgufView& model, MappedModel& m, const std::string& gguf_name,
                               const std::string& hf_pattern, uint64_t in, uint64_t out, uint64_t experts) {
    STORMO_TRY_ASSIGN(const GgufTensorInfo* t, checked_ne(model, gguf_name, {in, out, experts}));
    const std::optional<DType> dtype = in_file_dtype(*t);
    std::vector<float> values;
    if (!dtype) {
        STORMO_TRY_ASSIGN(values, dequantize(model, *t));
    }
    const size_t slot = hf_pattern.find("{e}");
    const auto per_expert = static_cast<std::ptrdiff_t>(in * out);
    const uint64_t slice = t->nbytes / experts;  // ne[0] is whole blocks, so every slice is
    for (uint64_t e = 0; e < experts; ++e) {
        std::string name = hf_pattern;
        name.replace(slot, 3, std::to_string(e));
        const Shape shape{static_cast<int64_t>(out), static_cast<int64_t>(in)};
        if (dtype) {
            m.tensors.push_back({std::move(name), shape, *dtype, t, slice * e, slice, {}});
        } else {
            const auto first = values.begin() + static_cast<std::ptrdiff_t>(e) * per_expert;
            add_values(m, std::move(name), shape, std::vector<float>(first, first + per_expert));
        }
    }
    return {};
}

std::vector<float> transpose_each(const std::vector<float>& v, uint64_t n, uint64_t rows, uint64_t cols) {
    std::vector<float> out(v.size());
    for (uint64_t e = 0; e < n; ++e)
        for (uint64_t r = 0; r < rows; ++r)
            for (uint64_t c = 0; c < cols; ++c) out[(e * cols + c) * rows + r] = v[(e * rows + r) * cols + c];
    return out;
}

Expected<uint64_t> embedding_rows(const GgufView& model, const Keys& k) {
    const GgufTensorInfo* embd = model.tensor("token_embd.weight");
    if (embd == nullptr) return fail(ErrorKind::missing, k.path() + ": tensor \"token_embd.weight\" is missing");
    if (embd->n_dims != 2)
        return fail(ErrorKind::mismatch, k.path() + ": tensor \"token_embd.weight\" has " + std::to_string(embd->n_dims) +
                                             " dimensions, not 2");
    return embd->ne[1];
}

namespace {

// The token id under `key` when present, checked to be below `vocab`.
Expected<std::optional<int64_t>> token_id_key(const Keys& k, const std::string& key, uint64_t vocab) {
    const GgufValue* v = k.find(key);
    if (v == nullptr) return std::optional<int64_t>();
    auto id = v->as_int();
    if (!id || *id < 0 || static_cast<uint64_t>(*id) >= vocab)
        return fail(ErrorKind::format, k.path() + ": " + key + " must be a token id below " + std::to_string(vocab));
    return std::optional<int64_t>(*id);
}

// Control-token texts that end generation in the chat formats the toolkit knows (a checkpoint's
// generation_config.json lists these ids beside the eos): GPT-2's <|endoftext|>, ChatML's
// <|im_end|>, harmony's <|return|> (not its <|end|>, which closes a message the reply goes on
// after), and the <|user|> and <|observation|> that start the next turn in the ChatGLM format.
constexpr std::array<std::string_view, 5> kEndOfGenerationTexts{"<|endoftext|>", "<|im_end|>", "<|return|>",
                                                                 "<|user|>", "<|observation|>"};

}  // namespace

Expected<std::optional<int64_t>> eos_token_id(const Keys& k, uint64_t vocab) {
    return token_id_key(k, "tokenizer.ggml.eos_token_id", vocab);
}

Expected<std::vector<int64_t>> end_of_generation_ids(const Keys& k, uint64_t vocab, std::optional<int64_t> eos) {
    std::vector<int64_t> ids;
    auto add = [&](int64_t id) {
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    };
    if (eos) add(*eos);
    for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
        STORMO_TRY_ASSIGN(const std::optional<int64_t> id, token_id_key(k, key, vocab));
        if (id) add(*id);
    }
    const GgufValue* tokens = k.find("tokenizer.ggml.tokens");
    const GgufValue* types = k.find("tokenizer.ggml.token_type");
    // A file without a token list (or a malformed one, which the tokenizer refuses by name) names
    // no more.
    if (tokens == nullptr || types == nullptr || !tokens->is_array() || !types->is_array() ||
        types->count != tokens->strings.size())
        return ids;
    for (uint64_t id = 0; id < tokens->strings.size() && id < vocab; ++id) {
        if (types->int_at(id) != std::optional<int64_t>(kGgufTokenControl)) continue;
        if (std::ranges::find(kEndOfGenerationTexts, tokens->strings[id]) != kEndOfGenerationTexts.end())
            add(static_cast<int64_t>(id));
    }
    return ids;
}

Expected<std::string> rope_parameters(const Keys& k, Yarn yarn) {
    STORMO_TRY_ASSIGN(const double theta, k.number(k.arch_key("rope.freq_base")));
    JsonObject rope;
    rope.text("rope_type", "default").number("rope_theta", theta);
    if (k.find(k.arch_key("rope.scaling.type")) == nullptr) return rope.str();
    // Held as the Expected itself: GCC 12 warns falsely (-Wmaybe-uninitialized) on a string moved
    // out by STORMO_TRY_ASSIGN and compared at once.
    const Expected<std::string> type = k.text(k.arch_key("rope.scaling.type"));
    if (!type) return tl::unexpected(type.error());
    const std::string& scaling = *type;
    if (scaling == "none") return rope.str();
    if (scaling != "yarn" || yarn == Yarn::refuse)
        return tl::unexpected(k.refuse("rope.scaling.type", "is " + in_quotes(scaling) + ", which the mapping of " +
                                                                k.arch() + " does not support"));
    STORMO_TRY_ASSIGN(const double factor, k.number(k.arch_key("rope.scaling.factor")));
    STORMO_TRY_ASSIGN(const uint64_t original, k.count(k.arch_key("rope.scaling.original_context_length")));
    // llama.cpp's defaults when the betas are absent, as transformers' (32 and 1).
    STORMO_TRY_ASSIGN(const double beta_fast, k.number_or(k.arch_key("rope.scaling.yarn_beta_fast"), 32.0));
    STORMO_TRY_ASSIGN(const double beta_slow, k.number_or(k.arch_key("rope.scaling.yarn_beta_slow"), 1.0));
    JsonObject y;
    y.text("rope_type", "yarn").number("rope_theta", theta).number("factor", factor);
    y.integer("original_max_position_embeddings", original).number("beta_fast", beta_fast).number("beta_slow", beta_slow);
    y.flag("truncate", yarn != Yarn::no_truncate);
    if (yarn == Yarn::deepseek) {
        STORMO_TRY_ASSIGN(const double attn_factor, k.number_or(k.arch_key("rope.scaling.yarn_attn_factor"), 1.0));
        if (attn_factor != 1.0)
            return tl::unexpected(k.refuse("rope.scaling.yarn_attn_factor", "is " + json_number(attn_factor) +
                                                                                  "; DeepSeek's YaRN scales attention by mscale alone"));
        STORMO_TRY_ASSIGN(const double log_multiplier, k.number(k.arch_key("rope.scaling.yarn_log_multiplier")));
        const double mscale = static_cast<double>(static_cast<float>(log_multiplier) / 0.1f);
        y.number("mscale", mscale).number("mscale_all_dim", mscale);
    }
    return y.str();
}

Expected<void> add_common_fields(JsonObject& j, const GgufView& model, const Keys& k, Yarn yarn, std::optional<int64_t> eos) {
    STORMO_TRY_ASSIGN(const double eps, k.number(k.arch_key("attention.layer_norm_rms_epsilon")));
    STORMO_TRY_ASSIGN(const uint64_t context, k.count(k.arch_key("context_length")));
    STORMO_TRY_ASSIGN(const std::string rope, rope_parameters(k, yarn));
    j.number("rms_norm_eps", eps).flag("tie_word_embeddings", model.tensor("output.weight") == nullptr);
    j.integer("max_position_embeddings", context).raw("rope_parameters", rope);
    if (eos) j.integer("eos_token_id", static_cast<uint64_t>(*eos));
    return {};
}

std::string json_number(double v) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
    return std::string(buf, end);
}

JsonObject& JsonObject::text(std::string_view key, std::string_view v) {
    std::string quoted = "\"";
    quoted += v;
    quoted += '"';
    return raw(key, quoted);
}

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
    if (!body_.empty()) body_ += ", ";
    body_ += '"';
    body_ += key;
    body_ += "\": ";
    body_ += json;
    return *this;
}

}  // namespace stormo::toolkit::gguf

// The config reader (stormo/toolkit/config_reader.hpp): typed fields with the first problem kept.
#include "stormo/toolkit/config_reader.hpp"

#include <cstdint>

#include "stormo/quote.hpp"

namespace stormo::toolkit {
namespace {

constexpr int64_t kMaxConfigCount = INT32_MAX;

Error invalid(const ModelConfig& c, const std::string& what) { return Error{ErrorKind::mismatch, c.source() + ": " + what}; }

Expected<std::optional<double>> optional_number_of(const ModelConfig& c, std::string_view key) {
    if (!c.has(key)) return std::optional<double>{};
    STORMO_TRY_ASSIGN(const double v, c.number(key));
    return std::optional<double>{v};
}

// The scaling section of either dialect, if the config has one.
Expected<std::optional<ModelConfig>> rope_section(const ModelConfig& c) {
    for (const char* key : {"rope_parameters", "rope_scaling"})
        if (c.has(key)) {
            STORMO_TRY_ASSIGN(ModelConfig nested, c.object(key));
            return std::optional<ModelConfig>(std::move(nested));
        }
    return std::optional<ModelConfig>{};
}

Expected<std::string> rope_kind(const ModelConfig& nested) {
    if (nested.has("rope_type")) return nested.string("rope_type");
    if (nested.has("type")) return nested.string("type");  // the older spelling
    return tl::unexpected(nested.missing("rope_type"));
}

Expected<void> read_yarn(const ModelConfig& c, const ModelConfig& nested, RopeParams& rope) {
    STORMO_TRY_ASSIGN(rope.original_max_position_embeddings, nested.number("original_max_position_embeddings"));
    if (rope.original_max_position_embeddings <= 0.0)
        return tl::unexpected(invalid(nested, "field \"original_max_position_embeddings\" must be positive"));
    if (!nested.has("factor")) {
        // transformers derives a null factor from the two context lengths.
        auto max_pos = c.number("max_position_embeddings");
        if (!max_pos) return tl::unexpected(nested.missing("factor"));
        rope.factor = *max_pos / rope.original_max_position_embeddings;
    }
    // beta_fast / beta_slow default to the YaRN paper's 32 / 1 in transformers (`get(...) or 32`).
    STORMO_TRY_ASSIGN(const auto beta_fast, optional_number_of(nested, "beta_fast"));
    STORMO_TRY_ASSIGN(const auto beta_slow, optional_number_of(nested, "beta_slow"));
    rope.beta_fast = beta_fast.value_or(0.0) != 0.0 ? *beta_fast : 32.0;
    rope.beta_slow = beta_slow.value_or(0.0) != 0.0 ? *beta_slow : 1.0;
    if (nested.has("truncate")) {  // default true
        STORMO_TRY_ASSIGN(rope.truncate, nested.boolean("truncate"));
    }
    STORMO_TRY_ASSIGN(rope.attention_factor, optional_number_of(nested, "attention_factor"));
    STORMO_TRY_ASSIGN(rope.mscale, optional_number_of(nested, "mscale"));
    STORMO_TRY_ASSIGN(rope.mscale_all_dim, optional_number_of(nested, "mscale_all_dim"));
    return {};
}

}  // namespace

Expected<RopeParams> read_rope(const ModelConfig& c) {
    STORMO_TRY_ASSIGN(const std::optional<ModelConfig> nested, rope_section(c));
    // rope_theta: inside rope_parameters (transformers 5), else at the top level (hub).
    const ModelConfig& theta_source = (nested && nested->has("rope_theta")) ? *nested : c;
    RopeParams rope;
    STORMO_TRY_ASSIGN(rope.theta, theta_source.number("rope_theta"));
    if (rope.theta <= 1.0) return tl::unexpected(invalid(theta_source, "field \"rope_theta\" must be > 1"));
    // partial_rotary_factor: in the section (transformers 5) or at the top level (hub).
    const ModelConfig& prf_source = (nested && nested->has("partial_rotary_factor")) ? *nested : c;
    if (prf_source.has("partial_rotary_factor")) {
        STORMO_TRY_ASSIGN(rope.partial_rotary_factor, prf_source.number("partial_rotary_factor"));
        if (!(rope.partial_rotary_factor > 0.0 && rope.partial_rotary_factor <= 1.0))
            return tl::unexpected(invalid(prf_source, "field \"partial_rotary_factor\" must be in (0, 1]"));
    }
    if (!nested) return rope;  // no scaling section: plain RoPE

    // Per-layer-type sections (a dict keyed by layer type) belong to models none of ours is.
    for (const char* kind : {"full_attention", "sliding_attention"})
        if (nested->has(kind))
            return fail(ErrorKind::unsupported, nested->source() + ": per-layer-type RoPE parameters are not supported");
    STORMO_TRY_ASSIGN(const std::string type, rope_kind(*nested));
    if (type == "default") return rope;
    if (type == "linear") rope.type = RopeType::linear;
    else if (type == "yarn") rope.type = RopeType::yarn;
    else
        return fail(ErrorKind::unsupported, nested->source() + ": rope_type \"" + type +
                                                "\" is not supported (default, linear, yarn)");
    if (nested->has("factor")) {
        STORMO_TRY_ASSIGN(rope.factor, nested->number("factor"));
    } else if (rope.type == RopeType::linear) {
        return tl::unexpected(nested->missing("factor"));
    }
    if (rope.type == RopeType::yarn) STORMO_TRY(read_yarn(c, *nested, rope));
    if (rope.factor <= 0.0) return tl::unexpected(invalid(*nested, "field \"factor\" must be positive"));
    return rope;
}

template <class T>
T ConfigReader::take(Expected<T> v, T neutral) {
    if (!ok()) return neutral;
    if (!v) {
        fail_with(v.error());
        return neutral;
    }
    return std::move(*v);
}

int64_t ConfigReader::checked_integer(std::string_view key, int64_t minimum) {
    if (!ok()) return 0;
    auto v = config_.integer(key);
    if (!v) {
        fail_with(v.error());
        return 0;
    }
    if (*v < minimum) {
        const std::string rule = minimum == 1 ? "must be positive" : "must be at least " + std::to_string(minimum);
        fail_with(invalid(config_, "field \"" + std::string(key) + "\" " + rule + ", found " + std::to_string(*v)));
        return 0;
    }
    // Counts and sizes (every field with a lower bound) must fit the int the families index with;
    // a larger one is a broken config.json, not a model.
    if (minimum != INT64_MIN && *v > kMaxConfigCount) {
        fail_with(invalid(config_, "field \"" + std::string(key) + "\" must be at most " +
                                       std::to_string(kMaxConfigCount) + ", found " + std::to_string(*v)));
        return 0;
    }
    integers_read_.emplace_back(std::string(key), *v);
    return *v;
}

int64_t ConfigReader::positive(std::string_view key) { return checked_integer(key, 1); }

int64_t ConfigReader::positive_any(std::initializer_list<std::string_view> keys) {
    for (std::string_view key : keys)
        if (config_.has(key)) return checked_integer(key, 1);
    return take(config_.integer_any(keys), int64_t{0});  // names every spelling
}

int64_t ConfigReader::integer(std::string_view key) { return checked_integer(key, INT64_MIN); }

int64_t ConfigReader::at_least(std::string_view key, int64_t minimum) { return checked_integer(key, minimum); }

int64_t ConfigReader::integer_or(std::string_view key, int64_t fallback, int64_t minimum) {
    if (!config_.has(key)) return fallback;
    return checked_integer(key, minimum);
}

std::vector<int64_t> ConfigReader::integers_or_empty(std::string_view key) {
    if (!config_.has(key)) return {};
    return take(config_.integers(key), std::vector<int64_t>{});
}

double ConfigReader::number(std::string_view key) { return take(config_.number(key), 0.0); }

double ConfigReader::positive_number(std::string_view key) {
    const double v = number(key);
    require(!ok() || v > 0.0, "field \"" + std::string(key) + "\" must be positive");
    return v;
}

std::optional<double> ConfigReader::optional_number(std::string_view key) {
    return take(optional_number_of(config_, key), std::optional<double>{});
}

bool ConfigReader::boolean(std::string_view key) { return take(config_.boolean(key), false); }

bool ConfigReader::boolean_or(std::string_view key, bool fallback) {
    if (!config_.has(key)) return fallback;
    return boolean(key);
}

std::string ConfigReader::string(std::string_view key) { return take(config_.string(key), std::string{}); }

std::vector<std::string> ConfigReader::strings(std::string_view key) {
    return take(config_.strings(key), std::vector<std::string>{});
}

std::optional<ModelConfig> ConfigReader::optional_object(std::string_view key) {
    if (!config_.has(key)) return std::nullopt;
    return take(config_.object(key).map([](ModelConfig m) { return std::optional<ModelConfig>(std::move(m)); }),
                std::optional<ModelConfig>{});
}

RopeParams ConfigReader::rope() { return take(read_rope(config_), RopeParams{}); }

void ConfigReader::silu_activation() {
    if (!ok() || !config_.has("hidden_act")) return;
    const std::string act = string("hidden_act");
    if (!ok()) return;  // not a string: string() kept that error
    require(act == "silu", "field \"hidden_act\" is " + in_quotes(act) + ": only \"silu\" (SwiGLU) is supported",
            ErrorKind::unsupported);
}

void ConfigReader::require(bool ok_now, const std::string& what, ErrorKind kind) {
    if (!ok_now) fail_with(Error{kind, config_.source() + ": " + what});
}

void ConfigReader::fail_with(Error e) {
    if (!error_) error_ = std::move(e);
}

Expected<void> ConfigReader::status() const {
    if (error_) return tl::unexpected(*error_);
    return {};
}

bool glob_prefix_match(std::string_view pattern, std::string_view name) {
    if (pattern.empty()) return true;
    if (pattern.front() == '*') {
        for (size_t skip = 0; skip <= name.size(); ++skip)
            if (glob_prefix_match(pattern.substr(1), name.substr(skip))) return true;
        return false;
    }
    if (name.empty() || pattern.front() != name.front()) return false;
    return glob_prefix_match(pattern.substr(1), name.substr(1));
}

bool module_listed(const std::vector<std::string>& patterns, std::string_view module) {
    for (const std::string& p : patterns)
        if (glob_prefix_match(p, module)) return true;
    return false;
}

}  // namespace stormo::toolkit

#pragma once
// Reading a family's hyper-parameters from config.json. The reader keeps the first problem it
// meets (the file and the field named, as ModelConfig's errors do) and hands out neutral values
// after it, so a family's config reads as a plain list of fields with one check at the end:
//
//   ConfigReader r(config);
//   cfg.hidden_size = r.positive("hidden_size");
//   cfg.n_experts = r.positive_any({"num_local_experts", "num_experts"});  // both dialects
//   cfg.rope = r.rope();                                                  // both dialects
//   r.require(cfg.top_k <= cfg.n_experts, "num_experts_per_tok exceeds the number of experts");
//   STORMO_TRY(r.status());
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/json.hpp"
#include "stormo/toolkit/rope.hpp"

namespace stormo::toolkit {

class ConfigReader {
public:
    explicit ConfigReader(const ModelConfig& config) : config_(config) {}

    const ModelConfig& config() const { return config_; }
    bool has(std::string_view key) const { return config_.has(key); }

    // Integers. positive: at least 1; positive_any: the first present of several spellings.
    int64_t positive(std::string_view key);
    int64_t positive_any(std::initializer_list<std::string_view> keys);
    int64_t integer(std::string_view key);
    int64_t at_least(std::string_view key, int64_t minimum);
    // Absent or null: `fallback`; present: an integer of at least `minimum`.
    int64_t integer_or(std::string_view key, int64_t fallback, int64_t minimum = 0);
    std::vector<int64_t> integers_or_empty(std::string_view key);

    double number(std::string_view key);
    double positive_number(std::string_view key);
    std::optional<double> optional_number(std::string_view key);  // absent or null: nullopt
    bool boolean(std::string_view key);
    bool boolean_or(std::string_view key, bool fallback);
    std::string string(std::string_view key);
    std::vector<std::string> strings(std::string_view key);
    std::optional<ModelConfig> optional_object(std::string_view key);

    // RoPE from either dialect: transformers 5's `rope_parameters` (rope_theta inside) or the
    // hub's top-level `rope_theta` with `rope_scaling`. Kinds: default, linear, yarn.
    RopeParams rope();

    // hidden_act, when given, must be "silu": the families whose transformers code applies
    // ACT2FN[hidden_act] in their MLPs and experts compute SiLU (SwiGLU) only, and another
    // activation would be ignored with exit 0.
    void silu_activation();

    // A rule between fields; `what` completes "<file>: ".
    void require(bool ok, const std::string& what, ErrorKind kind = ErrorKind::mismatch);
    void fail_with(Error e);
    bool ok() const { return !error_.has_value(); }
    Expected<void> status() const;
    // `value` when every read succeeded, else the first problem.
    template <class T>
    Expected<T> result(T value) const {
        if (error_) return tl::unexpected(*error_);
        return value;
    }

    // The integer fields read so far, in order, under the key the file used (for `inspect`).
    const std::vector<std::pair<std::string, int64_t>>& integers_read() const { return integers_read_; }

private:
    template <class T>
    T take(Expected<T> v, T neutral);
    int64_t checked_integer(std::string_view key, int64_t minimum);

    const ModelConfig& config_;
    std::optional<Error> error_;
    std::vector<std::pair<std::string, int64_t>> integers_read_;
};

// Reads the RoPE section of a config (see ConfigReader::rope), with errors as values.
Expected<RopeParams> read_rope(const ModelConfig& config);

// Whether a module (e.g. "model.layers.3.mlp.experts") is listed in a quantization_config's
// modules_to_not_convert. As transformers, a pattern matches from the start of the name and
// '*' matches any run of characters.
bool glob_prefix_match(std::string_view pattern, std::string_view name);
bool module_listed(const std::vector<std::string>& patterns, std::string_view module);

}  // namespace stormo::toolkit

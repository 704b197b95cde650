// Fuzzes config.json / generation_config.json: the JSON, then the reads every family makes
// (integers, numbers, lists, eos_token_id, the RoPE section through the family toolkit).
#include <cstddef>
#include <cstdint>
#include <string>

#include "stormo/json.hpp"
#include "stormo/toolkit/config_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto config = stormo::ModelConfig::parse(text, "fuzz/config.json");
    if (!config) return 0;
    // A reader keeps its first error and skips later reads: one per field reaches them all.
    auto read = [&](auto&& f) {
        stormo::toolkit::ConfigReader r(*config);
        f(r);
        (void)r.status();
    };
    read([](auto& r) { (void)r.positive("hidden_size"); });
    read([](auto& r) { (void)r.positive_any({"num_local_experts", "num_experts"}); });
    read([](auto& r) { (void)r.integer_or("head_dim", 0, 1); });
    read([](auto& r) { (void)r.integers_or_empty("eos_token_id"); });
    read([](auto& r) { (void)r.optional_number("rms_norm_eps"); });
    read([](auto& r) { (void)r.strings("architectures"); });
    read([](auto& r) { (void)r.rope(); });
    (void)config->integers("eos_token_id");
    (void)config->string("model_type");
    return 0;
}

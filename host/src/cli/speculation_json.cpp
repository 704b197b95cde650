#include "cli/speculation_json.hpp"

#include <string>

#include "runtime/sequence_generation.hpp"

namespace stormo::cli {

double gigabytes_read(Engine& engine, uint64_t steps, uint64_t acquired) {
    const MoeShape shape = moe_shape_of(engine.model());
    const uint64_t experts = static_cast<uint64_t>(shape.moe_layers) * shape.experts;
    const double per_expert = experts ? static_cast<double>(engine.store().total_expert_bytes()) / static_cast<double>(experts) : 0.0;
    return (static_cast<double>(engine.dense_bytes()) * static_cast<double>(steps) + per_expert * static_cast<double>(acquired)) / 1e9;
}

void write_speculation(JsonWriter& json, const SpeculationStats& s, SpeculateMode mode, uint64_t tokens, double gigabytes) {
    json.key("speculation").begin_object();
    json.field("mode", speculate_mode_name(mode))
        .field("verify_steps", s.verify_steps)
        .field("plain_steps", s.plain_steps)
        .field("drafted", s.drafted)
        .field("accepted", s.accepted)
        .field("acceptance", s.acceptance())
        .field("verify_seconds", s.verify_seconds)
        .field("plain_seconds", s.plain_seconds)
        .field("seconds_per_verify_step", s.verify_steps ? s.verify_seconds / static_cast<double>(s.verify_steps) : 0.0)
        .field("seconds_per_plain_step", s.plain_steps ? s.plain_seconds / static_cast<double>(s.plain_steps) : 0.0)
        .field("tokens_per_gb_read", gigabytes > 0 ? static_cast<double>(tokens) / gigabytes : 0.0);
    json.key("by_source").begin_object();
    for (const auto& [name, by] : s.by_source) {
        json.key(name).begin_object();
        json.field("drafted", by.drafted).field("accepted", by.accepted)
            .field("acceptance", by.drafted ? static_cast<double>(by.accepted) / static_cast<double>(by.drafted) : 0.0);
        json.end_object();
    }
    json.end_object();
    json.key("gate_choices").begin_object();
    for (const auto& [k, n] : s.gate_choices) json.field(std::to_string(k), n);
    json.end_object();
    json.end_object();
}

}  // namespace stormo::cli

// Fuzzes route traces (cache-sim --trace) and replays what parses through both policies, as
// cache-sim does, with the table bounds cache-sim enforces.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "store/cache_simulation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto trace = stormo::parse_route_trace(text, "fuzz.trace");
    if (!trace || trace->empty()) return 0;
    int layers = 0, experts = 0;
    for (const auto& step : *trace) {
        layers = std::max(layers, step.layer + 1);
        for (int32_t e : step.experts) experts = std::max(experts, e + 1);
    }
    if (int64_t{layers} * std::max(experts, 1) > (int64_t{1} << 16)) return 0;  // cache-sim refuses past 2^20
    for (auto policy : {stormo::EvictionPolicy::lru, stormo::EvictionPolicy::hotness})
        (void)stormo::simulate_cache(*trace, 4, stormo::EvictionSettings{policy, 0.9}, layers, std::max(experts, 1));
    return 0;
}

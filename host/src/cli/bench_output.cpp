#include "cli/bench_output.hpp"

#include <cstdio>
#include <iostream>

namespace stormo::cli::bench {

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}
std::string gbps(double bytes_per_s) { return fixed(bytes_per_s / 1e9, 2) + " GB/s"; }
std::string percent(double share) { return fixed(100.0 * share, 1) + "%"; }
std::string bytes_text(double bytes) { return format_bytes(static_cast<uint64_t>(bytes + 0.5)); }
std::string budget_text(const ExpertBudget& b) { return b.all ? std::string("all") : format_bytes(b.bytes); }

void engine_fields(JsonWriter& j, const LoadedEngine& loaded, const ExpertStoreStats& s, double load_seconds) {
    Engine& engine = *loaded.engine;
    j.field("model", engine.source().directory())
        .field("family", engine.family_name())
        .field("kernels", engine.kernels_name())
        .field("threads", engine.threads())
        .field("expert_budget", budget_text(engine.expert_budget()))
        .field("expert_budget_bytes", engine.expert_budget().all ? engine.store().total_expert_bytes()
                                                                   : engine.expert_budget().bytes)
        .field("expert_budget_requested", format_size(loaded.config.expert_budget))
        .field("expert_budget_reason", engine.expert_budget().reason)
        .field("slots", s.slots)
        .field("slot_bytes", s.slot_bytes)
        .field("direct_io", s.direct_io)
        .field("load_seconds", load_seconds);
}

void optional_field(JsonWriter& j, const char* key, const std::optional<double>& v) {
    j.key(key);
    if (v) j.value(*v);
    else j.null();
}

void row(const std::string& label, const std::string& value, const std::string& bound, const std::string& ratio) {
    char line[256];
    std::snprintf(line, sizeof line, "%-28s %-14s %-24s %s", label.c_str(), value.c_str(), bound.c_str(), ratio.c_str());
    std::string s = line;
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::cout << s << "\n";
}

void machine_rows(const Probes& probes, uint64_t peak_rss_bytes) {
    const RamBandwidth& ram = probes.ram();
    row("RAM read bandwidth", gbps(ram.bytes_per_s),
        std::to_string(ram.threads) + " threads x " + std::to_string(ram.streams) + " streams (best), " + ram.loop +
            " loop, best of " + std::to_string(ram.passes) + " passes");
    row("", "", "before loading " + gbps(probes.ram_before.bytes_per_s) + ", after the decode " +
                    (probes.ram_after ? gbps(probes.ram_after->bytes_per_s) : std::string("not measured")));
    row("disk read bandwidth", probes.disk_measured ? gbps(probes.disk.bytes_per_s) : std::string("not measured"),
        probes.disk_measured ? (probes.disk.direct_io ? std::string("O_DIRECT, ") : std::string("buffered, ")) +
                                   format_bytes(probes.disk_block) + " reads, " + std::to_string(probes.disk_in_flight) +
                                   " in flight, best of " + std::to_string(probes.disk.passes)
                             : std::string());
    if (probes.disk_measured && !probes.disk.note.empty()) row("", "", probes.disk.note);
    row("peak RSS", format_bytes(peak_rss_bytes));
}

void engine_header(const Engine& engine, const ExpertStoreStats& s) {
    std::cout << "stormo bench: " << engine.source().directory() << "\n"
              << "  family " << engine.family_name() << ", kernels " << engine.kernels_name() << ", " << engine.threads()
              << " threads, expert budget " << budget_text(engine.expert_budget()) << ", " << s.slots
              << " slots, " << (s.direct_io ? "O_DIRECT" : "buffered") << " expert reads\n";
}

}  // namespace stormo::cli::bench

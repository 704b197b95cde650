#pragma once
// What `stormo bench` prints around its figures, shared by the run of one sequence and the run of
// several (--parallel): the machine's probes, the engine's header and JSON fields, the table's rows.
#include <cstdint>
#include <optional>
#include <string>

#include "util/json_writer.hpp"
#include "cli/model_command.hpp"
#include "tools/bandwidth.hpp"
#include "tools/bench.hpp"
#include "tools/parallel_bench.hpp"

namespace stormo::cli {
struct BenchRouting;
}  // namespace stormo::cli

namespace stormo::cli::bench {

struct Probes {
    RamBandwidth ram_before;                 // before the model is loaded
    std::optional<RamBandwidth> ram_after;   // right after the decode, with the model resident
    // The bound: the faster of the two, since a bound is what the memory reached.
    const RamBandwidth& ram() const {
        return ram_after && ram_after->bytes_per_s > ram_before.bytes_per_s ? *ram_after : ram_before;
    }
    DiskBandwidth disk;
    bool disk_measured = false;
    uint64_t disk_block = 0;
    size_t disk_in_flight = 0;
};

std::string fixed(double v, int decimals);
std::string gbps(double bytes_per_s);
std::string percent(double share);
std::string bytes_text(double bytes);
std::string budget_text(const ExpertBudget& b);

// The fields every `bench --json` object opens with: the engine and how it was set up.
void engine_fields(JsonWriter& j, const LoadedEngine& loaded, const ExpertStoreStats& s, double load_seconds);
// A number, or null.
void optional_field(JsonWriter& j, const char* key, const std::optional<double>& v);

// One line of the table: a label and three columns.
void row(const std::string& label, const std::string& value, const std::string& bound = "", const std::string& ratio = "");
// The table's first lines: the model and how the engine runs it.
void engine_header(const Engine& engine, const ExpertStoreStats& s);
// The machine's bandwidths measured in the run, and the peak RSS.
void machine_rows(const Probes& probes, uint64_t peak_rss_bytes);

// --parallel N: the batch's figures, sequence 0 alone's beside them and their ratios.
// `routing`: the routes were replaced (bench --routing), said first; nullptr: the model's own.
void print_parallel_table(const LoadedEngine& loaded, const ParallelBenchRun& run, const DecodeTraffic& traffic,
                          const Probes& probes, const ParallelBenchReport& r, const BenchRouting* routing);
void print_parallel_json(const LoadedEngine& loaded, const ParallelBenchRun& run, const DecodeTraffic& traffic,
                         const Probes& probes, const ParallelBenchReport& r, double load_seconds, const BenchRouting* routing);

}  // namespace stormo::cli::bench

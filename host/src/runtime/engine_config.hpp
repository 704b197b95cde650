#pragma once
// The engine configuration: a YAML file (configs/default.yaml documents every key and holds the
// defaults), overridden by command-line options; both are read by the one table of settings in
// engine_settings.hpp. Each value remembers where it came from, so an error later names the
// option or the file at fault.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "runtime/speculate_mode.hpp"
#include "store/eviction.hpp"      // EvictionPolicy: the store owns its policies
#include "util/format_bytes.hpp"

namespace stormo {

// A byte size as the user writes it: "8GiB", "512MiB", "123", "all" or "auto".
struct SizeSpec {
    enum class Kind { bytes, all, automatic };
    Kind kind = Kind::automatic;
    uint64_t bytes = 0;  // kind == bytes
};

// Parses a size: an integer (optionally with a fraction) and a unit among KiB, MiB, GiB, TiB and
// K, M, G, T (all powers of 1024, case-insensitive), or "all" / "auto". Errors name `option`.
STORMO_API Expected<SizeSpec> parse_size(std::string_view text, std::string_view option);
// The same, with only the reason when the text is not a size ("unknown unit 'GB' (...)").
STORMO_API tl::expected<SizeSpec, std::string> read_size(std::string_view text);
// format_bytes(bytes), or "all" / "auto".
STORMO_API std::string format_size(const SizeSpec& size);

// The activation road of the matrix kernels: f32 (default: float activations, differences from
// the reference kernels only through summation order) or int8 (activations quantized to int8 once
// per row and call, integer dot products against MXFP4 weights; docs/kernels.md).
enum class ActivationRoad { f32, int8 };
STORMO_API const char* activation_road_name(ActivationRoad r);
// "f32" or "int8" (case-insensitive); nullopt otherwise.
STORMO_API std::optional<ActivationRoad> activation_road_from_name(std::string_view name);

// How a distributed run splits each layer's routed experts over its ranks (docs/distributed.md):
// `even` (default) or `weighted` by each rank's measured memory for experts and disk bandwidth.
enum class RankSplit { even, weighted };
STORMO_API const char* rank_split_name(RankSplit s);
// "even" or "weighted" (case-insensitive); nullopt otherwise.
STORMO_API std::optional<RankSplit> rank_split_from_name(std::string_view name);

// How greedy decoding reads the LM head: `bounded` (default) decides the argmax from a compact
// int8 copy and computes exact logits only for the rows it cannot rule out (the same token,
// always: docs/head_bound.md); `exact-only` computes every logit, as sampling does.
enum class HeadRead { bounded, exact_only };
STORMO_API const char* head_read_name(HeadRead h);
// "bounded" or "exact-only" (case-insensitive; "exact_only" too); nullopt otherwise.
STORMO_API std::optional<HeadRead> head_read_from_name(std::string_view name);

// How dense BF16 matrices (attention, routers, dense FFNs, embedding and head) are held in RAM:
// `packed` (default) as BF16_PACKED, the same values in about 0.75 of the bytes, which every
// kernel reads back to the BF16 kernels' bits (stormo/packed_bf16_layout.hpp); `plain` as the
// checkpoint holds them.
enum class DenseBf16 { packed, plain };
STORMO_API const char* dense_bf16_name(DenseBf16 d);
// "packed" or "plain" (case-insensitive); nullopt otherwise.
STORMO_API std::optional<DenseBf16> dense_bf16_from_name(std::string_view name);

struct STORMO_API EngineConfig {
    std::string kernels = "auto";           // "auto", "reference" or a kernels plugin name
    std::string family = "auto";            // "auto" or a model plugin name
    std::optional<int> threads;             // nullopt: one per physical core
    SizeSpec expert_budget;                 // RAM for routed experts
    std::vector<std::string> plugins_dirs;  // searched after the built-in and STORMO_PLUGIN_PATH dirs
    std::vector<std::string> plugins_dir_origins;  // where each of plugins_dirs was named
    // KV context length. Given (an origin is recorded) when --context or a YAML context: sets it;
    // otherwise generate and bench size it to the run (prompt + max tokens), logits to its ids,
    // and inspect plans for this default.
    int64_t context = 4096;
    EvictionPolicy eviction = EvictionPolicy::adaptive;
    double hotness_decay = 0.95;            // heat kept per step of an expert's layer (hotness)
    double hotness_margin = 0.25;           // share hotter a newcomer must be to displace (<0: off)
    bool prefetch = true;
    bool async_compute = true;              // compute experts as their reads land
    bool direct_io = true;
    int io_threads = 4;                     // expert reads in flight
    ActivationRoad activations = ActivationRoad::f32;  // the matrix kernels' activation road
    HeadRead head = HeadRead::bounded;      // how greedy decoding reads the LM head
    DenseBf16 dense_bf16 = DenseBf16::packed;  // how dense BF16 matrices are held in RAM
    bool pin_threads = false;               // pin the compute pool's workers to CPUs (WorkerPool)
    SpeculateMode speculate = SpeculateMode::off;  // speculative decoding (docs/speculation.md)
    int draft_max = 8;                      // drafts a verify step carries at most
    int rank_timeout = 60;                  // seconds rank 0 waits for another rank (mpirun)
    RankSplit rank_split = RankSplit::even; // how the ranks share each layer's experts (mpirun)

    std::string source = "built-in defaults";  // the file the values came from
    // Where each key's value came from, e.g. "kernels" -> "--kernels" or "kernels in my.yaml".
    std::map<std::string, std::string, std::less<>> origins;

    // "--kernels", "kernels in FILE", or "kernels (default)".
    std::string origin(std::string_view key) const;
};

// The most compute threads stormo starts: 8 per logical CPU, and never more than 1024 (more only
// time-slice the same cores and cost a stack each).
STORMO_API int max_threads();
// Why a positive thread count is more than stormo starts ("more than the N threads ..."), or nullopt.
STORMO_API std::optional<std::string> thread_count_problem(int64_t threads);
// A thread count from `origin` ("--threads-list"): 1..max_threads(), or an error naming the
// origin and the cap.
STORMO_API Expected<void> check_thread_count(int64_t threads, const std::string& origin);

// The longest context accepted from the command line or a file (far beyond any model's positions;
// it bounds the KV arithmetic before the model's own max_position_embeddings is checked).
inline constexpr int64_t kMaxContext = int64_t{1} << 32;

// The keys a YAML engine configuration may hold, in documentation order (engine_settings.hpp's
// table, which also makes the command-line options).
STORMO_API const std::vector<std::string>& engine_config_keys();

// The defaults (identical to configs/default.yaml; a test holds them equal).
STORMO_API EngineConfig default_engine_config();
// Parses YAML text over the defaults: keys absent keep their default.
STORMO_API Expected<EngineConfig> parse_engine_config(std::string_view yaml_text,
                                                      const std::string& source_name);
STORMO_API Expected<EngineConfig> load_engine_config(const std::string& path);

}  // namespace stormo

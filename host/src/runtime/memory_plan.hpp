#pragma once
// How much RAM the expert store may use: the budget asked for, or by default what is available at
// start (the cgroup's limit when the process runs under one, v1 or v2) minus the KV cache and a
// stated reserve. The dense part is already resident when this is measured.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine_config.hpp"
#include "stormo/family.hpp"
#include "stormo/json.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct AvailableMemory {
    uint64_t bytes = 0;
    std::string source;  // "MemAvailable", or "cgroup v2 limit 8.00 GiB at /sys/fs/cgroup/x minus RSS"
};

// MemAvailable, or a cgroup limit (the tightest of the process's cgroup and its ancestors) minus
// this process's resident set, whichever is smaller.
AvailableMemory available_memory();

struct ExpertBudget {
    bool all = false;       // every expert resident (read at load)
    uint64_t bytes = 0;     // the slots' budget when !all
    std::string reason;     // how it was decided, for `inspect` and the start-up line
};

// The reserve kept free for activations, scratch and the rest of the system.
uint64_t memory_reserve(uint64_t available);

ExpertBudget plan_expert_budget(const SizeSpec& requested, uint64_t total_expert_bytes, uint64_t kv_bytes,
                                const AvailableMemory& available);

// An asked budget ("all", or a size) whose resident experts cannot fit in the memory available
// would end with the kernel's OOM killer half-way through loading: it is refused up front, naming
// `origin` (the option or YAML key) and both sizes. The auto budget always fits.
Expected<void> check_budget_fits(const SizeSpec& requested, const ExpertBudget& budget, uint64_t total_expert_bytes,
                                 const AvailableMemory& available, const std::string& origin);

// The context asked (`origin`: "--context", "context in FILE", or the run's own need) checked
// against the model and the machine before anything is planned around it: at most the model's
// max_position_embeddings (when config.json has it), and a KV cache of kv_bytes that fits in the
// memory available. The error blames the context, not the expert budget it would starve.
Expected<void> check_context_fits(uint64_t context, const std::string& origin, const ModelConfig& config,
                                  uint64_t kv_bytes, const AvailableMemory& available);

// The KV cache a session of `context` positions holds: each of `buffers` (every layer's, in order)
// has `context` rows, or a sliding window's ring (Session::rows_for, with the session's default
// block and `rewind_slack`), of floats_per_position floats.
uint64_t kv_cache_bytes(std::span<const KvBufferDecl> buffers, size_t context, size_t rewind_slack = 0);

// The context a run holds when neither the command line nor the run fixes it (chat, serve, a run
// that continues a saved conversation): the longest whose KV caches fit in the memory the experts
// can spare, at most the model's max_position_embeddings, and never less than `need` (a run's own
// positions; such a context is checked like an asked one). The KV may take what is left once
// every expert fits, and otherwise an eighth of the room, so the experts keep most of it.
struct ContextChoice {
    size_t context = 0;
    std::string reason;  // for --verbose: "chosen from memory: ..." or the model's limit
};
struct ContextRequest {
    std::span<const KvBufferDecl> kv;
    size_t rewind_slack = 0;
    size_t sequences = 1;         // the KV caches held at once (a server's slots)
    uint64_t max_positions = 0;   // the model's max_position_embeddings; 0 when config.json has none
    size_t fallback = 4096;       // the context without a model limit to stop at
    size_t need = 0;
    uint64_t expert_bytes = 0;    // every routed expert
    SizeSpec expert_budget;       // an asked budget takes its bytes first
    AvailableMemory available;    // with the dense part already taken off
};
ContextChoice choose_context(const ContextRequest& request);
// The model's max_position_embeddings, or 0 when config.json has none.
Expected<uint64_t> max_positions_of(const ModelConfig& config);

// The most sequences a run holds when their number is left to the memory: past it a step's rows
// make each sequence's tokens slower than a user waiting on them would accept, for little gain.
inline constexpr size_t kMaxAutoSequences = 4;

// What a run sets aside besides the dense part: its KV cache and the expert store's budget. The
// one plan of Engine::open and of `inspect`, so what inspect shows is what the engine reserves.
struct RunMemoryRequest {
    const ModelConfig* config = nullptr;  // its max_position_embeddings bounds the context
    std::vector<KvBufferDecl> kv;         // every layer's KV buffers (ModelSummary::kv_buffers, LayerPlan::kv)
    size_t context = 0;                   // 0: chosen from memory (choose_context), at least context_need
    size_t context_need = 0;
    std::string context_origin;           // "--context", "context in FILE" or the run's need
    size_t rewind_slack = 0;              // see Session
    uint64_t expert_bytes = 0;            // every routed expert
    SizeSpec expert_budget;
    std::string expert_budget_origin;
    AvailableMemory available;            // with the dense part (and any compact head) already taken off
    // Sessions of `context` positions the run holds at once (a server's slots), each with its own
    // KV cache. 0: as many as fit beside a minimum expert budget, at most max_auto_sequences.
    size_t sequences = 1;
    size_t max_auto_sequences = kMaxAutoSequences;
    std::string sequences_origin = "--parallel";
};

struct RunMemory {
    size_t context = 0;                  // the request's, or the one chosen from memory
    std::string context_reason;          // how it was decided, for the start-up line
    uint64_t kv_bytes = 0;               // every sequence's KV cache
    uint64_t kv_bytes_per_sequence = 0;  // one session's of `context` positions
    uint64_t expert_bytes = 0;
    ExpertBudget budget;
    size_t sequences = 1;
    std::string sequences_reason;        // how the sequences were decided, for the start-up line
};

// The least expert budget several sequences leave the store (capped at every expert's bytes):
// below it, every step's experts stream from disk, which no batch makes up for.
inline constexpr uint64_t kMinExpertBudget = uint64_t{2} << 30;

struct SequencePlan {
    size_t sequences = 1;
    std::string reason;
};

// How many sequences of kv_per_sequence bytes of KV fit beside `min_expert_bytes` of experts and
// the reserve in the memory available. asked 0: that many (at least 1, at most max_auto); asked 1:
// one, as a single-session run always was; asked more: refused, naming `origin`, when they do not fit.
Expected<SequencePlan> plan_sequences(size_t asked, size_t max_auto, const std::string& origin, uint64_t kv_per_sequence,
                                      size_t context, uint64_t min_expert_bytes, const AvailableMemory& available);

// Checks the context against the model and the memory (check_context_fits), decides the sequences
// (plan_sequences), plans the expert budget around their KV caches and refuses an asked budget
// that cannot fit (check_budget_fits).
Expected<RunMemory> plan_run_memory(const RunMemoryRequest& request);

// One description of an expert budget for `inspect` and `generate --verbose`: how it was reached
// and, when experts stream, the slots it buys ("about" when the slot size is estimated).
std::string describe_budget(const ExpertBudget& budget, uint64_t slots, uint64_t slot_bytes, bool estimated);

// This process's resident set now (VmRSS) and at its peak (VmHWM), from /proc/self/status.
uint64_t current_rss_bytes();
uint64_t peak_rss_bytes();

}  // namespace stormo

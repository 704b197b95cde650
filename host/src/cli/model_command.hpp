#pragma once
// What the commands that run a model share: opening the engine from the common options, reading
// token ids, and the `--dump` option.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "model/model_bundle.hpp"
#include "runtime/dump_tracer.hpp"
#include "runtime/engine.hpp"
#include "runtime/remote_experts.hpp"
#include "runtime/sampler.hpp"

namespace stormo::cli {

struct LoadedEngine {
    EngineConfig config;
    std::unique_ptr<Engine> engine;
    size_t context = 0;          // the session context: see context_for and ContextRule
    std::string context_origin;  // "--context", "context in FILE", the run's need or the memory's choice
    // Under mpirun with several ranks (docs/distributed.md). Rank 0: the MoE stage's link to the
    // other ranks' experts (destroyed before the engine, it tells them to stop). Any other rank:
    // served_as_rank is true once rank 0 has stopped it, and the command has nothing left to do.
    std::unique_ptr<RemoteExperts> remote_experts = {};
    bool served_as_rank = false;
};

// How `run`, `chat` and `serve` size the context when --context / context: does not: the run's
// own need, or (from_memory) as long as the memory allows up to the model's
// max_position_embeddings and at least the need (runtime/memory_plan.hpp, choose_context).
struct ContextRule {
    size_t need = 0;
    bool from_memory = false;
};

// The one rule for the context: --context / context: when given; else the run's own need
// (run_need: prompt + max tokens for generate and bench, the ids for logits) when the command has
// one; else the configuration's default (4096).
// run_need_origin names the need in errors ("the prompt + --max-tokens").
size_t context_for(const EngineConfig& config, size_t run_need);
std::string context_origin_for(const EngineConfig& config, size_t run_need, const std::string& run_need_origin);

// Resolves the engine configuration and opens the model with its family and kernels chosen.
// rewind_slack: see Session (a chat's sessions rewind past their last answer every turn).
// run_need: the positions the run needs (0: none), which sizes the context unless it is given.
// sequences: the sessions the run holds at once (EngineOptions::sequences).
Expected<LoadedEngine> open_engine(const CommonOptions& options, size_t rewind_slack = 0, size_t run_need = 0,
                                   const std::string& run_need_origin = "the context this run needs", size_t sequences = 1);
// The same with --model opened already by open_model_bundle, whose tokenizer and chat template
// the command took first: the model is opened once. sequences: EngineOptions::sequences.
Expected<LoadedEngine> open_engine(const CommonOptions& options, const ModelBundle& bundle, size_t rewind_slack,
                                   const ContextRule& context, size_t sequences = 1);
// Under mpirun, a rank other than 0 of a command that rank 0 alone runs in full (run, chat, pipe,
// serve): it opens the engine from the command's options and serves its experts to rank 0 until
// rank 0 stops it, without reading stdin, binding a port or writing a file. Returns the exit
// status then; nullopt on rank 0 and alone, where the command runs.
std::optional<int> serve_experts_as_rank(const std::string& command, const CommonOptions& common);
// The last part of a model's path ("gpt-oss-20b" for "models/gpt-oss-20b/"), for messages.
std::string model_name(const std::string& path);

// Opens --model once (model/model_bundle.hpp); errors name it as --model PATH.
Expected<ModelBundle> open_model_bundle(const CommonOptions& options);

// --temperature --top-k --top-p --min-p --repeat-penalty --repeat-last-n --seed
void add_sampling_options(po::options_description& d, SamplingParams& out);

// --ids LIST (comma-separated) or --ids-file FILE (whitespace or commas); exactly one.
struct TokenInput {
    std::optional<std::string> list;
    std::optional<std::string> file;
};
void add_token_input(po::options_description& d, TokenInput& out);
Expected<std::vector<int32_t>> read_token_ids(const TokenInput& input);

// Output files checked before any work: each writable, not a directory, not empty, and no two
// options naming the same file. Pairs of (option, path); absent paths are skipped.
struct OutputPath {
    std::string option;
    std::optional<std::string> path;
};
Expected<void> check_outputs(const std::vector<OutputPath>& outputs);

// --dump DIR [--dump-position P]: the named intermediates of one position as .npy files.
struct DumpOptions {
    std::optional<std::string> dir;
    int64_t position = -1;  // -1: the command's default
    bool position_given = false;
};
void add_dump_options(po::options_description& d, DumpOptions& out, const char* position_help);
// DIR must be a directory or creatable (checked before the work starts, creates nothing), and not
// one of the command's output files (made as a directory first, it would leave the file unwritable
// and itself behind); a --dump-position must be >= 0 and come with --dump (alone it would silently
// do nothing).
Expected<void> check_dump_dir(const DumpOptions& options, const std::vector<OutputPath>& outputs);
// Creates DIR and the tracer when --dump was given (else leaves `tracer` empty).
Expected<void> start_dump(const DumpOptions& options, int64_t default_position, std::optional<DumpTracer>& tracer);
// The first write error of the dump, if any.
Expected<void> finish_dump(const std::optional<DumpTracer>& tracer);

}  // namespace stormo::cli

#pragma once
// The command line shared by every model command (the command-line contract's "Options every model command
// accepts"), and the steps every such command starts with: the engine configuration (YAML file
// then options), the plugin search, and opening the model with its family and kernels chosen.
//
// A command builds its own options_description, adds the common ones, and calls
// parse_command_line; errors come back as values and the command returns report_error(e).
#include <boost/program_options.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_source.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "plugin_loading/selection.hpp"
#include "runtime/engine_config.hpp"
#include "runtime/model_setup.hpp"
#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"

namespace stormo::cli {

namespace po = boost::program_options;

// Exit statuses: 0 success, 1 a failure while running, 2 a command line that is wrong.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// An unsigned option (a seed) read strictly as decimal digits: boost reads "-1" as 2^64 - 1, a
// fixed seed where a user of llama.cpp means a random one. Use po::value<UnsignedArg>().
struct UnsignedArg {
    uint64_t value = 0;
};
void validate(boost::any& out, const std::vector<std::string>& values, UnsignedArg*, int);

// The error of a model command run without a model.
inline constexpr const char* kModelRequired = "a model is required: give its directory or GGUF file as the first argument or with --model";

struct CommonOptions {
    std::optional<std::string> model;
    std::optional<std::string> config;
    // The engine settings given on the command line, by key (engine_settings.hpp): the option's
    // argument, or each of a repeated option's.
    std::map<std::string, std::vector<std::string>, std::less<>> settings;
    bool verbose = false;  // the engine's set-up (family, kernels, expert budget) on stderr at start
    // The command runs with every rank of an mpirun taking part (generate, logits, bench:
    // docs/distributed.md); a command that does not refuses several ranks when it opens the model.
    bool takes_ranks = false;

    // The one value given for `key`, if any.
    std::optional<std::string> given(std::string_view key) const;
};

// --model (-m) --config, an option for every engine setting (--kernels, --threads, --context, ...:
// the table in engine_settings.hpp; -t and -c / --ctx-size as llama.cpp spells them) and
// --verbose, stored into `out` when parsed. `out` must outlive the parse.
po::options_description common_options(CommonOptions& out);

enum class ParseResult { run, help_shown };

// Parses argv (argv[0] is the subcommand's name) against `options` plus --help. On --help prints
// "usage: stormo <command> <synopsis>", the description and the options to stdout. Errors
// (unknown option, bad value, stray argument) name the option and have kind invalid_argument;
// an unknown option names the command's option closest to it ("did you mean --prompt?").
// `positional`: the options the words that are not options fill, in order ({"model", "prompt"}:
// `stormo run MODEL PROMPT`); an option given both ways, or a word past them, is an error.
Expected<ParseResult> parse_command_line(int argc, char** argv, const std::string& command,
                                         const std::string& synopsis, const std::string& description,
                                         const po::options_description& options,
                                         const std::vector<std::string>& positional = {});

// The option of `options` (plus --help) whose name is closest to `unknown` ("--promt"), as
// "--prompt", when one is near enough to be the one meant; nullopt otherwise.
std::optional<std::string> closest_option(const std::string& unknown, const po::options_description& options);

// "--port must be between 0 and 65535, not 70000" (with `unit` after the bounds: " seconds").
tl::unexpected<Error> out_of_range(const std::string& option, int64_t value, int64_t lo, int64_t hi, const std::string& unit = "");

// Prints "stormo: <command>: <message>" on one line to stderr and returns the exit status for the
// error. A wrong command line or option value (ErrorKind::invalid_argument, exit status 2) ends
// with the hint "(see 'stormo <command> --help')".
int report_error(const std::string& command, const Error& error);
// The same for an error known to be about the command line, whatever its kind.
int report_usage_error(const std::string& command, const Error& error);

// --config FILE (or the built-in defaults, which configs/default.yaml documents), then each
// setting given on the command line over it, checked by the same table as the file's keys.
Expected<EngineConfig> resolve_engine_config(const CommonOptions& options);

// Built-in directory, STORMO_PLUGIN_PATH, the configuration's plugins_dirs, then --plugins-dir.
PluginSearch plugin_search(const EngineConfig& config, const CommonOptions& options);
Expected<PluginRegistry> discover_plugins(const EngineConfig& config, const CommonOptions& options);

// Everything a model command needs before it loads weights: the resolved configuration and the
// plugins, model source and selections made from it.
struct ModelSetup : stormo::ModelSetup {
    EngineConfig config;
};

// The setup request the configuration and options describe.
SetupRequest setup_request(const EngineConfig& config, const CommonOptions& options);

// Requires --model. Opens the directory, discovers plugins, chooses the family (forced by
// --family / family:) and the kernels (--kernels / kernels:).
Expected<std::unique_ptr<ModelSetup>> open_model_setup(const CommonOptions& options);

}  // namespace stormo::cli

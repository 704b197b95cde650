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

struct CommonOptions {
    std::optional<std::string> model;
    std::optional<std::string> config;
    // The engine settings given on the command line, by key (engine_settings.hpp): the option's
    // argument, or each of a repeated option's.
    std::map<std::string, std::vector<std::string>, std::less<>> settings;
    bool verbose = false;  // the engine's set-up (family, kernels, expert budget) on stderr at start

    // The one value given for `key`, if any.
    std::optional<std::string> given(std::string_view key) const;
};

// --model --config, an option for every engine setting (--kernels, --threads, --context, ...:
// the table in engine_settings.hpp) and --verbose, stored into `out` when parsed. `out` must
// outlive the parse.
po::options_description common_options(CommonOptions& out);

enum class ParseResult { run, help_shown };

// Parses argv (argv[0] is the subcommand's name) against `options` plus --help. On --help prints
// "usage: stormo <command> <synopsis>", the description and the options to stdout. Errors
// (unknown option, bad value, stray argument) name the option and have kind invalid_argument.
Expected<ParseResult> parse_command_line(int argc, char** argv, const std::string& command,
                                         const std::string& synopsis, const std::string& description,
                                         const po::options_description& options);

// Prints "stormo: <message>" on one line to stderr and returns the exit status for the error.
int report_error(const Error& error);
// The same for a command-line error of `command` ("see stormo <command> --help").
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

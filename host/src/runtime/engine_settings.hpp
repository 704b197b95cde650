#pragma once
// The one table of engine settings. Each row names a setting once (its YAML key, its command-line
// flag, the form of its value, its default, its check and its help text); the YAML reader
// (engine_config.cpp), the command-line options (cli/options.cpp) and the EngineOptions an engine
// opens with (engine_options below) are all made from it, so a key cannot be settable one way and
// not the other, or checked differently by the two.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/engine_config.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct EngineOptions;

// Where a value came from: "--threads" or "threads in my.yaml" (EngineConfig::origin's forms),
// the error kind a bad value gets there (a command line is a usage error, a file a config one),
// and the file, against which a relative plugins directory is resolved (empty: the command line).
struct SettingSource {
    std::string origin;
    ErrorKind kind = ErrorKind::invalid_argument;
    std::string file;
};

struct EngineSetting {
    enum class Form { one, list };  // one value (a YAML scalar), or a list (a YAML sequence; a repeatable flag)
    std::string_view key;           // the YAML key, and the key of EngineConfig::origins
    std::string_view flag;          // the command-line option, without "--"
    std::string_view value_name;    // the value's name in --help
    Form form = Form::one;
    std::string_view default_text;  // the default as configs/default.yaml writes it
    std::string_view expected;      // what a value must be, for errors: "a positive integer or auto"
    std::string_view help;          // the option's --help text
    // Sets the value from its text (a YAML scalar, or the option's argument; for a list each
    // item adds to it). The reason the text is refused, or nullopt; `self` is this row.
    std::optional<std::string> (*set)(EngineConfig& config, std::string_view text, const SettingSource& source,
                                      const EngineSetting& self);
    // Copies the value into the options an engine opens with.
    void (*fill)(const EngineConfig& config, EngineOptions& options);
};

// Every setting, in documentation order (configs/default.yaml's).
STORMO_API std::span<const EngineSetting> engine_settings();
// The row for a YAML key, or nullptr.
STORMO_API const EngineSetting* find_engine_setting(std::string_view key);

// Applies one value: records `source.origin` for the key and sets it, or fails with
// "<origin> <value>: <reason>" (the value quoted and cut unless it is a plain integer), the same
// words from the command line and from a file.
STORMO_API Expected<void> apply_setting(EngineConfig& config, const EngineSetting& setting, std::string_view text,
                                        const SettingSource& source);

// The options an engine opens with, from a resolved configuration: every setting's value, the
// plugin search and the family and kernels asked. The context is the configuration's; a command
// that sizes the context to its run sets it afterwards. The model directory is left empty.
STORMO_API EngineOptions engine_options(const EngineConfig& config);

}  // namespace stormo

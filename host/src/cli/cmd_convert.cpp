// stormo convert --model SRC --out DIR [--force]: any model the engine reads rewritten as a
// stormo container laid out for streaming (tools/convert.hpp, docs/convert.md). Progress on a
// terminal, a summary line on stderr at the end.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/progress.hpp"
#include "tools/convert.hpp"
#include "util/format_bytes.hpp"

namespace stormo::cli {

int run_convert(int argc, char** argv) {
    CommonOptions common;
    std::string out;
    bool force = false;
    po::options_description d("convert options");
    d.add(common_options(common));
    d.add_options()
        ("out", po::value<std::string>(&out)->value_name("DIR")->required(), "the container's directory (must not exist, unless --force)")
        ("force", po::bool_switch(&force), "replace DIR if it exists (only once the new container is whole)");
    auto parsed = parse_command_line(argc, argv, "convert", "--model SRC --out DIR [--force]",
                                     "Rewrites a model (safetensors, GGUF or a container) as a stormo container: each routed expert "
                                     "in one aligned range, the same bytes, a manifest with every tensor's sha256.",
                                     d, {"model"});
    if (!parsed) return report_usage_error("convert", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (!common.model) return report_usage_error("convert", Error{ErrorKind::invalid_argument, kModelRequired});
    auto config = resolve_engine_config(common);
    if (!config) return report_error("convert", config.error());

    ConvertRequest request;
    request.setup = setup_request(*config, common);
    request.out = out;
    request.force = force;
    TerminalProgress progress;
    if (progress.enabled())
        request.progress = [&progress](uint64_t done, uint64_t total) { progress.bytes("converting", done, total); };
    auto result = convert_model(request);
    progress.clear();
    if (!result) return report_error("convert", result.error());
    std::cerr << "stormo: convert: wrote " << result->dir << ": " << result->tensors << " tensors, " << result->experts << " experts, "
              << format_bytes(result->data_bytes) << "; reads per expert " << result->source_reads_per_expert << " in the source, "
              << result->container_reads_per_expert << " in the container\n";
    return 0;
}

}  // namespace stormo::cli

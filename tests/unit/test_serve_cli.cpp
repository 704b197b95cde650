// `stormo serve`'s command line: wrong options are refused with status 2 before any port is taken,
// a broken model directory fails before listening, an address in use is named.
#include <gtest/gtest.h>

#include "cli_runner.hpp"
#include "oracle_support.hpp"

namespace stormo::testing {
namespace {

using stormo::test::CommandResult;
CommandResult serve(const std::string& args) { return stormo::test::run_cli("serve " + args); }

TEST(ServeCli, WrongOptionsAreRefusedBeforeListening) {
    const std::string model = " --model " + demo_dir();
    struct Case {
        std::string args;
        const char* message;
    };
    const Case cases[] = {
        {"--port 8080", "a model is required"},
        {model + " --port 70000", "--port must be between 0 and 65535, not 70000"},
        {model + " --max-queue 0", "--max-queue must be between 1 and 4096, not 0"},
        {model + " --timeout 0", "--timeout must be between 1 and 3600 seconds, not 0"},
        {model + " --header-timeout 0", "--header-timeout must be between 1 and 3600 seconds, not 0"},
        {model + " --tokenize-budget 10", "--tokenize-budget must be a size from 1KiB to 16GiB"},
        {model + " --max-body 10", "--max-body must be a size from 1KiB to 1GiB"},
        {model + " --ctx 64 --context 128", "--ctx and --context name different contexts"},
        {model + " --api-key ''", "--api-key must not be empty"},
        {model + " --shutdown-grace -1", "--shutdown-grace must be between 0 and 3600 seconds, not -1"},
        {model + " --parallel 0", "--parallel must be between 1 and 256, not 0"},
        {model + " --log-format yaml", "--log-format must be text or json, not \"yaml\""},
        {model + " --cors-origin app.example", "--cors-origin app.example: an origin is scheme://host[:port]"},
        {model + " --cors-origin https://app.example/path", "an origin has no path, query or space"},
        {model + " --alias ''", "--alias must be a name without spaces"},
    };
    for (const Case& c : cases) {
        const CommandResult r = serve(c.args);
        EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_EQ(r.err.find("listening"), std::string::npos) << c.args;
    }
}

TEST(ServeCli, ABadModelDirectoryOrHostFailsBeforeListening) {
    const CommandResult missing = serve("--model /nonexistent/model --port 0");
    EXPECT_EQ(missing.status, 1) << missing.err;
    EXPECT_NE(missing.err.find("/nonexistent/model"), std::string::npos) << missing.err;
    EXPECT_EQ(missing.err.find("listening"), std::string::npos);
    const CommandResult host = serve("--model " + demo_dir() + " --port 0 --host no-such-host.invalid");
    EXPECT_NE(host.status, 0);
    EXPECT_NE(host.err.find("--host no-such-host.invalid"), std::string::npos) << host.err;
}

TEST(ServeCli, HelpNamesTheRoutesAndOptions) {
    const CommandResult r = serve("--help");
    EXPECT_EQ(r.status, 0);
    for (const char* s : {"/v1/chat/completions", "--host", "--port", "--api-key", "--max-queue", "--ctx", "--timeout",
                          "--max-body", "--shutdown-grace", "--header-timeout", "--tokenize-budget", "--expert-budget", "--context",
                          "--parallel", "--alias", "--cors-origin", "--log-format"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace stormo::testing

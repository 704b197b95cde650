#pragma once
// Runs the stormo binary (or any command line) the way a user would, capturing its exit status,
// stdout and stderr. STORMO_PLUGIN_PATH is cleared so only the built-in directory and the given
// flags decide which plugins load.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "safetensors_writer.hpp"

namespace stormo::test {

struct CommandResult {
    int status = -1;
    std::string out;
    std::string err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

inline CommandResult run_command(const std::string& command) {
    TempDir tmp;
    const std::string out = tmp.file("stdout");
    const std::string err = tmp.file("stderr");
    const std::string line = "env -u STORMO_PLUGIN_PATH " + command + " >'" + out + "' 2>'" + err + "'";
    const int raw = std::system(line.c_str());
    CommandResult r;
    r.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

// `stormo ARGS` with the binary of this build.
inline CommandResult run_cli(const std::string& args) { return run_command(std::string("'") + STORMO_CLI + "' " + args); }

}  // namespace stormo::test

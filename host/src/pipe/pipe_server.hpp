#pragma once
// `stormo pipe`'s loop over one session: reads protocol lines, checks each request against the
// session and the model before any KV change, runs it, and writes the answer lines, flushed one by
// one so a client reading tokens sees them as they come.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipe/pipe_protocol.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/forward.hpp"
#include "runtime/session.hpp"
#include "runtime/speculation.hpp"
#include "runtime/speculation_gate.hpp"

namespace stormo::pipe {

// The longest line read; a longer one is refused (ERROR line_too_long) and skipped whole. A full
// context of ids (128k positions of up to 10 digits) fits several times over.
inline constexpr size_t kMaxLineBytes = 16u << 20;

enum class LineRead { line, too_long, end };
// Reads up to '\n' (not kept). A line longer than `cap` is consumed to its end and reported.
LineRead read_line(std::istream& in, std::string& line, size_t cap = kMaxLineBytes);

struct PipeModel {
    size_t vocab = 0;
    std::vector<int32_t> stop_ids;
    uint64_t seed = 0;  // every turn samples from this seed: the same turn gives the same answer
    SpeculationSettings speculation = {};  // --speculate, --draft-max: the same tokens either way
};

// What SAVE and LOAD need from the engine: its identity (read at the first SAVE or LOAD, not at
// start) and a new session of the pipe's context for a file to load into.
struct PipeSessionFiles {
    std::function<Expected<EngineIdentity>()> identity;
    std::function<Expected<std::unique_ptr<Session>>()> blank_session;
};

class PipeServer {
public:
    PipeServer(Pipeline& pipeline, std::unique_ptr<Session> session, PipeModel model, std::ostream& out,
               PipeSessionFiles files = {});

    // Writes READY.
    void greet();
    // Handles one line; false once the client asked to shut down.
    bool handle(std::string_view line);
    // greet(), then lines until SHUTDOWN, the end of input or a fatal error. False if the output
    // failed (the client is gone).
    bool serve(std::istream& in);
    // The error that ended serve() early, after its fatal ERROR line: a lost rank under mpirun
    // (docs/distributed.md), after which no turn could be answered.
    const std::optional<Error>& fatal() const { return fatal_; }
    // Over every turn answered so far: speculation's counts (--stats) and the tokens generated.
    const SpeculationStats& speculation() const { return speculation_; }
    uint64_t generated() const { return generated_; }

private:
    void turn(const TurnCommand& command);
    // SAVED or ERROR save_failed; LOADED or ERROR load_failed. A failed one changes nothing.
    void save(const SaveCommand& command);
    void load(const LoadCommand& command);
    Expected<const EngineIdentity*> identity();
    // The engine-dependent checks, all before the session changes.
    std::optional<LineError> check(const TurnCommand& command) const;
    void write(const std::string& line);

    Pipeline* pipeline_;
    std::unique_ptr<Session> session_;
    PipeModel model_;
    std::ostream* out_;
    PipeSessionFiles files_;
    std::optional<EngineIdentity> identity_;
    std::optional<Error> fatal_;
    // The speculation gate's step costs and acceptance, learned across turns as serve and chat
    // learn them across requests: a turn of a few tokens would otherwise start from the priors.
    std::shared_ptr<SpeculationMemory> speculation_memory_;
    SpeculationStats speculation_;
    uint64_t generated_ = 0;
};

}  // namespace stormo::pipe

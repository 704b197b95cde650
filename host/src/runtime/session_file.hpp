#pragma once
// A session on disk: the tokens and KV of one sequence (pages, sliding-window rings, recurrent
// states: Session's raw state), the identity of the engine that computed them, and the caller's
// own record (a conversation's messages, as JSON text). Loading it into a session of the same
// layout gives the bits the saved session held, so a run continued from it is the run that never
// stopped.
//
// Layout: a fixed preamble ("STORMO-SESSION", format version, header length), a header
// (identity, layout, position, sizes, the caller's record, and from format 2 on the experts the
// last step's rows routed to: Session::routed_experts) with its XXH3-64 checksum, then the
// sections (tokens, pages, rings and states), each followed by its checksum. Format 1 files (no
// experts) still load. Written through
// AtomicFileWriter: a crash or a full disk leaves the previous file or none, never a part.
// Loading refuses, naming what is wrong: a file that is not a session file, a newer format, a
// header or section that fails its checksum, a truncated file, another model, config, engine,
// kernels road or context layout, or more positions than the context holds.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/engine_identity.hpp"
#include "runtime/session.hpp"
#include "stormo/error.hpp"

namespace stormo {

inline constexpr uint32_t kSessionFileFormat = 2;
inline constexpr uint32_t kOldestSessionFileFormat = 1;

struct SessionFileStats {
    uint64_t bytes = 0;   // the file's size
    double seconds = 0;   // writing it (fsync and rename included) or reading and checking it
};

// Saves `session` (at its position) to `path`, replacing any file there atomically. `record` is
// stored as it is and given back by load_session_file.
Expected<SessionFileStats> save_session_file(const std::string& path, const Session& session,
                                             const EngineIdentity& identity, std::string_view record);

struct LoadedSessionFile {
    std::unique_ptr<Session> session;
    std::string record;
    SessionFileStats stats;
};

// Loads `path` into `blank`, a new session of the running engine (Engine::new_session) with the
// context it will run with; on any error `blank` is dropped and nothing else changed. The session
// comes back with the routed_experts it was saved with, for the caller to read ahead
// (store/read_ahead.hpp) into the store that will run it.
Expected<LoadedSessionFile> load_session_file(const std::string& path, const EngineIdentity& identity,
                                              std::unique_ptr<Session> blank);

}  // namespace stormo

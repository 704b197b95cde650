#include "pipe/pipe_server.hpp"

#include <istream>
#include <ostream>

#include "runtime/generation.hpp"
#include "runtime/sequence_generation.hpp"
#include "runtime/session_file.hpp"
#include "store/read_ahead.hpp"

namespace stormo::pipe {

LineRead read_line(std::istream& in, std::string& line, size_t cap) {
    line.clear();
    std::streambuf* buf = in.rdbuf();
    bool too_long = false;
    for (;;) {
        const int c = buf->sbumpc();
        if (c == std::char_traits<char>::eof()) {
            in.setstate(std::ios::eofbit);
            if (too_long) return LineRead::too_long;
            return line.empty() ? LineRead::end : LineRead::line;
        }
        if (c == '\n') return too_long ? LineRead::too_long : LineRead::line;
        if (line.size() < cap)
            line.push_back(static_cast<char>(c));
        else
            too_long = true;
    }
}

PipeServer::PipeServer(Pipeline& pipeline, std::unique_ptr<Session> session, PipeModel model, std::ostream& out,
                       PipeSessionFiles files)
    : pipeline_(&pipeline),
      session_(std::move(session)),
      model_(std::move(model)),
      out_(&out),
      files_(std::move(files)),
      speculation_memory_(std::make_shared<SpeculationMemory>(moe_shape_of(pipeline.model()))) {}

void PipeServer::write(const std::string& line) { *out_ << line << '\n' << std::flush; }

void PipeServer::greet() { write(ready_line(session_->capacity(), model_.vocab, model_.stop_ids)); }

std::optional<LineError> PipeServer::check(const TurnCommand& command) const {
    if (command.keep > session_->position())
        return LineError{"bad_keep", "keep " + std::to_string(command.keep) + " is beyond the session's position " +
                                         std::to_string(session_->position())};
    for (const int32_t id : command.ids)
        if (static_cast<size_t>(id) >= model_.vocab)
            return LineError{"bad_token", "id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                              std::to_string(model_.vocab) + ")"};
    if (command.keep + command.ids.size() > session_->capacity())
        return LineError{"context_full", "keep " + std::to_string(command.keep) + " + " + std::to_string(command.ids.size()) +
                                             " ids exceed the context of " + std::to_string(session_->capacity())};
    return std::nullopt;
}

void PipeServer::turn(const TurnCommand& command) {
    if (auto refused = check(command)) return write(error_line(refused->code, false, refused->message));
    // Generated tokens but the last are fed back, so `room` tokens fit after the ids.
    const size_t room = session_->capacity() - command.keep - command.ids.size();
    GenerationRequest request;
    request.prompt = command.ids;
    request.max_tokens = std::min(command.max_new, room);
    request.sampling = command.sampling;
    request.sampling.seed = model_.seed;
    request.stop_ids = model_.stop_ids;
    request.speculation = model_.speculation;
    request.speculation_memory = speculation_memory_;
    session_->rewind(command.keep);
    size_t n_out = 0;
    auto result = generate(*pipeline_, *session_, request, [&](int32_t id) {
        write(token_line(id));
        ++n_out;
    });
    if (!result && result.error().kind == ErrorKind::peer_lost) {
        fatal_ = result.error();
        return write(error_line("peer_lost", true, result.error().message));
    }
    if (!result) {
        // generate() rewound to `keep`: the session is consistent and the client can go on.
        return write(error_line("engine", false,
                                result.error().message + " (the session is back at position " +
                                    std::to_string(session_->position()) + ")"));
    }
    speculation_.add(result->speculation);
    generated_ += result->tokens.size();
    DoneReason reason = DoneReason::max_tokens;
    if (result->reason == StopReason::stop)
        reason = DoneReason::stop;
    else if (request.max_tokens < command.max_new)
        reason = DoneReason::context_full;
    write(done_line(reason, n_out, session_->position()));
}

Expected<const EngineIdentity*> PipeServer::identity() {
    if (!identity_) {
        if (!files_.identity) return fail(ErrorKind::unsupported, "this pipe keeps no session files");
        STORMO_TRY_ASSIGN(EngineIdentity id, files_.identity());
        identity_ = std::move(id);
    }
    return &*identity_;
}

void PipeServer::save(const SaveCommand& command) {
    auto id = identity();
    if (!id) return write(error_line("save_failed", false, id.error().message));
    // The pipe has no conversation of its own: the record is empty, and the client keeps its history.
    auto saved = save_session_file(command.path, *session_, **id, "");
    if (!saved) return write(error_line("save_failed", false, saved.error().message + " (the file keeps what it held)"));
    write(saved_line(session_->position(), saved->bytes));
}

void PipeServer::load(const LoadCommand& command) {
    auto id = identity();
    if (!id) return write(error_line("load_failed", false, id.error().message));
    if (!files_.blank_session) return write(error_line("load_failed", false, "this pipe keeps no session files"));
    auto blank = files_.blank_session();
    if (!blank) return write(error_line("load_failed", false, blank.error().message));
    auto loaded = load_session_file(command.path, **id, std::move(*blank));
    if (!loaded)
        return write(error_line("load_failed", false,
                                loaded.error().message + " (the session is as it was, at position " +
                                    std::to_string(session_->position()) + ")"));
    session_ = std::move(loaded->session);
    read_ahead_experts(pipeline_->store(), session_->routed_experts());
    write(loaded_line(session_->position()));
}

bool PipeServer::handle(std::string_view line) {
    auto parsed = parse_line(line);
    if (auto* error = std::get_if<LineError>(&parsed)) {
        write(error_line(error->code, false, error->message));
        return true;
    }
    auto& command = std::get<Command>(parsed);
    if (std::holds_alternative<ShutdownCommand>(command)) return false;
    if (std::holds_alternative<ResetCommand>(command)) {
        session_->rewind(0);
        return true;
    }
    if (const auto* save_command = std::get_if<SaveCommand>(&command)) {
        save(*save_command);
        return true;
    }
    if (const auto* load_command = std::get_if<LoadCommand>(&command)) {
        load(*load_command);
        return true;
    }
    turn(std::get<TurnCommand>(command));
    return !fatal_;
}

bool PipeServer::serve(std::istream& in) {
    greet();
    std::string line;
    for (;;) {
        if (!*out_) return false;
        switch (read_line(in, line)) {
            case LineRead::end: return true;
            case LineRead::too_long:
                write(error_line("line_too_long", false, "a line is longer than " + std::to_string(kMaxLineBytes) +
                                                             " bytes; it was skipped"));
                continue;
            case LineRead::line:
                if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are ignored
                if (!handle(line)) return static_cast<bool>(*out_);
        }
    }
}

}  // namespace stormo::pipe

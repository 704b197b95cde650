// The pipe protocol's lines parsed and formatted on their own, without an engine.
#include <gtest/gtest.h>

#include <sstream>

#include "pipe/pipe_protocol.hpp"
#include "pipe/pipe_server.hpp"

namespace stormo::pipe {
namespace {

TurnCommand turn_of(const std::string& line) {
    auto parsed = parse_line(line);
    EXPECT_TRUE(std::holds_alternative<Command>(parsed)) << line << ": " << std::get<LineError>(parsed).message;
    return std::get<TurnCommand>(std::get<Command>(parsed));
}

LineError error_of(const std::string& line) {
    auto parsed = parse_line(line);
    EXPECT_TRUE(std::holds_alternative<LineError>(parsed)) << line;
    return std::holds_alternative<LineError>(parsed) ? std::get<LineError>(parsed) : LineError{};
}

TEST(PipeProtocol, ATurnCarriesItsFieldsInOrder) {
    const TurnCommand t = turn_of("TURN 12 3 0.7 0.9 40 4 1 2 3 45");
    EXPECT_EQ(t.max_new, 12u);
    EXPECT_EQ(t.keep, 3u);
    EXPECT_FLOAT_EQ(t.sampling.temperature, 0.7f);
    EXPECT_FLOAT_EQ(t.sampling.top_p, 0.9f);
    EXPECT_EQ(t.sampling.top_k, 40);
    EXPECT_EQ(t.ids, (std::vector<int32_t>{1, 2, 3, 45}));
}

TEST(PipeProtocol, SpacesTabsAndACarriageReturnSeparateWords) {
    const TurnCommand t = turn_of("TURN\t5  0 0 1 0 2 7   8\r");
    EXPECT_EQ(t.max_new, 5u);
    EXPECT_EQ(t.ids, (std::vector<int32_t>{7, 8}));
    EXPECT_FLOAT_EQ(t.sampling.temperature, 0.0f);
}

// A tiny value is a number, not "not a finite number": it rounds to zero or a subnormal float.
TEST(PipeProtocol, TinyRealsRoundInsteadOfBeingRefused) {
    EXPECT_FLOAT_EQ(turn_of("TURN 5 0 1e-300 1 0 1 7").sampling.temperature, 0.0f);
    EXPECT_GT(turn_of("TURN 5 0 1e-40 1 0 1 7").sampling.temperature, 0.0f);
    EXPECT_NE(error_of("TURN 5 0 1e99 1 0 1 7").message.find("temp 1e99 is beyond the range of a float"), std::string::npos);
}

TEST(PipeProtocol, ResetAndShutdownTakeNoArguments) {
    EXPECT_TRUE(std::holds_alternative<ResetCommand>(std::get<Command>(parse_line("RESET"))));
    EXPECT_TRUE(std::holds_alternative<ShutdownCommand>(std::get<Command>(parse_line("SHUTDOWN"))));
    EXPECT_EQ(error_of("RESET now").code, "bad_request");
    EXPECT_EQ(error_of("SHUTDOWN 1").code, "bad_request");
}

TEST(PipeProtocol, SaveAndLoadTakeTheRestOfTheLineAsTheirPath) {
    const auto save = std::get<Command>(parse_line("SAVE /tmp/a b/x.session \r"));
    ASSERT_TRUE(std::holds_alternative<SaveCommand>(save));
    EXPECT_EQ(std::get<SaveCommand>(save).path, "/tmp/a b/x.session");
    const auto load = std::get<Command>(parse_line("LOAD\t rel.session"));
    ASSERT_TRUE(std::holds_alternative<LoadCommand>(load));
    EXPECT_EQ(std::get<LoadCommand>(load).path, "rel.session");
    for (const char* line : {"SAVE", "LOAD  \t\r"}) {
        const LineError e = error_of(line);
        EXPECT_EQ(e.code, "bad_request") << line;
        EXPECT_NE(e.message.find("needs a path"), std::string::npos) << e.message;
    }
    const LineError control = error_of(std::string("SAVE a\x01b", 8));
    EXPECT_EQ(control.code, "bad_request");
    EXPECT_NE(control.message.find("control character"), std::string::npos) << control.message;
    EXPECT_EQ(error_of("save x").code, "unknown_command");  // case matters, as for every verb
}

TEST(PipeProtocol, EachMalformedTurnNamesItsField) {
    struct Case {
        const char* line;
        const char* code;
        const char* says;
    };
    const Case cases[] = {
        {"TURN 12 0 0 1 0", "bad_request", "TURN needs"},
        {"TURN x 0 0 1 0 1 5", "bad_request", "max_new"},
        {"TURN -1 0 0 1 0 1 5", "bad_request", "max_new"},
        {"TURN 5 1.5 0 1 0 1 5", "bad_request", "keep"},
        {"TURN 5 0 hot 1 0 1 5", "bad_request", "temp"},
        {"TURN 5 0 nan 1 0 1 5", "bad_request", "temp"},
        {"TURN 5 0 1e99 1 0 1 5", "bad_request", "temp"},
        {"TURN 5 0 -0.5 1 0 1 5", "bad_sampling", "temp"},
        {"TURN 5 0 0 0 0 1 5", "bad_sampling", "top_p"},
        {"TURN 5 0 0 1.5 0 1 5", "bad_sampling", "top_p"},
        {"TURN 5 0 0 1 -3 1 5", "bad_request", "top_k"},
        {"TURN 5 0 0 1 0 2 5", "bad_request", "n is 2 but 1 ids follow"},
        {"TURN 5 0 0 1 0 1 5 6", "bad_request", "n is 1 but 2 ids follow"},
        {"TURN 5 0 0 1 0 0", "bad_request", "at least one id"},
        {"TURN 5 0 0 1 0 1 -5", "bad_request", "id"},
        {"TURN 5 0 0 1 0 1 99999999999", "bad_request", "id"},
        {"TURN 99999999999 0 0 1 0 1 5", "bad_request", "max_new"},
        {"turn 5 0 0 1 0 1 5", "unknown_command", "unknown command 'turn'"},
        {"HELLO", "unknown_command", "expected TURN, RESET, SAVE, LOAD or SHUTDOWN"},
    };
    for (const auto& c : cases) {
        const LineError e = error_of(c.line);
        EXPECT_EQ(e.code, c.code) << c.line;
        EXPECT_NE(e.message.find(c.says), std::string::npos) << c.line << " -> " << e.message;
    }
}

TEST(PipeProtocol, AnUnknownVerbIsShownPrintableAndShort) {
    const LineError e = error_of(std::string("\x01\x02") + std::string(100, 'A'));
    EXPECT_EQ(e.message.find('\x01'), std::string::npos);
    EXPECT_LT(e.message.size(), 100u);
}

TEST(PipeProtocol, AnswerLinesHaveTheDocumentedShape) {
    const int32_t stops[] = {48, 2};
    EXPECT_EQ(ready_line(4096, 50, stops), "READY 4096 50 48 2");
    EXPECT_EQ(ready_line(128, 50, {}), "READY 128 50");
    EXPECT_EQ(token_line(579), "TOKEN 579");
    EXPECT_EQ(done_line(DoneReason::stop, 4, 12), "DONE STOP 4 12");
    EXPECT_EQ(done_line(DoneReason::max_tokens, 3, 9), "DONE MAX_TOKENS 3 9");
    EXPECT_EQ(done_line(DoneReason::context_full, 0, 16), "DONE CONTEXT_FULL 0 16");
    EXPECT_EQ(error_line("bad_token", false, "id 99\nis out"), "ERROR bad_token 0 id 99 is out");
    EXPECT_EQ(error_line("load", true, "no model"), "ERROR load 1 no model");
    EXPECT_EQ(saved_line(57, 123456), "SAVED 57 123456");
    EXPECT_EQ(loaded_line(57), "LOADED 57");
}

TEST(PipeProtocol, ReadLineSkipsAnOverlongLineWholeAndGoesOn) {
    std::istringstream in("short\n" + std::string(40, 'x') + "\nnext\nlast");
    std::string line;
    EXPECT_EQ(read_line(in, line, 16), LineRead::line);
    EXPECT_EQ(line, "short");
    EXPECT_EQ(read_line(in, line, 16), LineRead::too_long);
    EXPECT_EQ(read_line(in, line, 16), LineRead::line);
    EXPECT_EQ(line, "next");
    EXPECT_EQ(read_line(in, line, 16), LineRead::line);  // no final newline: still a line
    EXPECT_EQ(line, "last");
    EXPECT_EQ(read_line(in, line, 16), LineRead::end);
}

}  // namespace
}  // namespace stormo::pipe

// `stormo pipe` driven as an embedding program drives it: a child process on two pipes, one line
// written, the answer lines read as they come. Its greedy and sampled turns equal `generate`'s.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <simdjson.h>

#include "cli_runner.hpp"
#include "oracle_support.hpp"
#include "pipe_process.hpp"
#include "util/file.hpp"

namespace stormo::testing {
namespace {

// `stormo generate`'s ids for the same request, as TOKEN lines.
std::vector<std::string> generate_tokens(const std::string& ids, const std::string& options) {
    const auto r = stormo::test::run_cli("generate --model " + demo_dir() + " --ids " + ids + " " + options);
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string id; std::getline(in, id);) lines.push_back("TOKEN " + id);
    return lines;
}

std::vector<std::string> tokens_of(const std::vector<std::string>& answer) {
    return {answer.begin(), answer.end() - 1};
}

// A field of a --stats file, by JSON pointer ("/speculation/drafted"); the file's text on failure.
template <typename T>
T stats_field(const std::string& path, std::string_view pointer) {
    auto text = stormo::read_file(path);
    EXPECT_TRUE(text.has_value()) << path;
    if (!text) return T{};
    auto json = simdjson::padded_string(*text);
    simdjson::ondemand::parser parser;
    auto doc = parser.iterate(json);
    T value{};
    if constexpr (std::is_same_v<T, std::string>) {
        std::string_view view;
        EXPECT_EQ(doc.at_pointer(pointer).get_string().get(view), simdjson::SUCCESS) << pointer << " in " << *text;
        value = std::string(view);
    } else {
        EXPECT_EQ(doc.at_pointer(pointer).get_uint64().get(value), simdjson::SUCCESS) << pointer << " in " << *text;
    }
    return value;
}

TEST(CliPipe, GreetsThenAnswersATurnAsGenerateDoes) {
    PipeProcess p({"--model", demo_dir()});
    EXPECT_EQ(p.line(), "READY 4096 64 48");  // the demo: 64 ids, <|end|> = 48 stops
    p.send("TURN 12 0 0 1 0 8 1 2 3 40 4 5 6 45");  // "123+456="
    const auto answer = p.answer();
    EXPECT_EQ(tokens_of(answer), (std::vector<std::string>{"TOKEN 5", "TOKEN 7", "TOKEN 9", "TOKEN 48"}));
    // 8 prompt ids and 3 of the 4 generated ones consumed: the stop id is the next turn's to send.
    EXPECT_EQ(answer.back(), "DONE STOP 4 11");
    p.send("SHUTDOWN");
    EXPECT_EQ(p.wait_exit(), 0);
}

TEST(CliPipe, ANextTurnKeepsThePositionsAndEqualsTheWholeConversationRunFresh) {
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 4 3 40 8 45");  // "3+8="
    const auto first = p.answer();
    ASSERT_TRUE(first.back().starts_with("DONE STOP")) << first.back();
    // The answer's last id (the stop) and the next problem, after everything kept.
    std::string held = "3,40,8,45";
    for (size_t i = 0; i + 1 < first.size() - 1; ++i) held.append(",").append(first[i].substr(6));
    const std::string stop = first[first.size() - 2].substr(6);
    const size_t pos = std::stoul(first.back().substr(first.back().rfind(' ') + 1));
    p.send("TURN 12 " + std::to_string(pos) + " 0 1 0 9 " + stop + " 1 7 8 40 7 9 8 45");  // "178+798="
    const auto second = p.answer();
    EXPECT_EQ(tokens_of(second), generate_tokens(held + "," + stop + ",1,7,8,40,7,9,8,45", "--max-tokens 12"));
    EXPECT_TRUE(second.back().starts_with("DONE STOP")) << second.back();
    p.close_input();
    EXPECT_EQ(p.line(), "<eof>");
    EXPECT_EQ(p.wait_exit(), 0);  // the end of input is a clean exit too
}

TEST(CliPipe, EveryRefusedLineChangesNothingAndTheNextTurnStillAnswers) {
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 4 3 40 8 45");
    const auto first = p.answer();
    ASSERT_TRUE(first.back().starts_with("DONE")) << first.back();
    const std::string pos = first.back().substr(first.back().rfind(' ') + 1);
    const std::pair<std::string, std::string> refused[] = {
        {"HELLO", "ERROR unknown_command 0 "},
        {"TURN 12 0 0 1 0 2 1", "ERROR bad_request 0 n is 2 but 1 ids follow"},
        {"TURN 12 0 0 1 0 1 64", "ERROR bad_token 0 id 64 is outside the vocabulary [0, 64)"},
        {"TURN 12 999 0 1 0 1 5", "ERROR bad_keep 0 keep 999 is beyond the session's position " + pos},
        {"TURN 12 0 -1 1 0 1 5", "ERROR bad_sampling 0 temp must be >= 0"},
        {"TURN 12 0 0 0 0 1 5", "ERROR bad_sampling 0 top_p must be in (0, 1]"},
        {"TURN 5000 0 0 1 0 5000 " + [] {
             std::string ids;
             for (int i = 0; i < 5000; ++i) ids.append(i ? " " : "").append(std::to_string(i % 40));
             return ids;
         }(),
         "ERROR context_full 0 keep 0 + 5000 ids exceed the context of 4096"},
        {"RESET please", "ERROR bad_request 0 RESET takes no arguments"},
    };
    for (const auto& [line, expected] : refused) {
        p.send(line);
        const auto answer = p.answer();
        ASSERT_EQ(answer.size(), 1u) << line;
        EXPECT_TRUE(answer[0].starts_with(expected)) << line << " -> " << answer[0];
    }
    p.send("");  // blank lines are ignored
    // Still at the first turn's end: continuing from there gives what a fresh run of the whole gives.
    p.send("TURN 12 " + pos + " 0 1 0 1 48");
    std::string held = "3,40,8,45";
    for (size_t i = 0; i + 1 < first.size(); ++i) held.append(",").append(first[i].substr(6));
    const auto again = p.answer();
    EXPECT_EQ(tokens_of(again), generate_tokens(held, "--max-tokens 12"));
}

TEST(CliPipe, ASampledTurnIsSeededAndEqualsGenerateWithTheSameSettings) {
    PipeProcess p({"--model", demo_dir(), "--seed", "9"});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 6 0 1.2 0.95 8 5 1 2 40 3 45");
    const auto first = p.answer();
    EXPECT_EQ(tokens_of(first), generate_tokens("1,2,40,3,45", "--max-tokens 6 --temperature 1.2 --top-k 8 --top-p 0.95 --seed 9"));
    p.send("TURN 6 0 1.2 0.95 8 5 1 2 40 3 45");  // keep 0: the same request again, the same answer
    EXPECT_EQ(p.answer(), first);
}

TEST(CliPipe, ResetForgetsEveryPosition) {
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 4 3 40 8 45");
    ASSERT_TRUE(p.answer().back().starts_with("DONE"));
    p.send("RESET");
    p.send("TURN 12 1 0 1 0 1 5");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"ERROR bad_keep 0 keep 1 is beyond the session's position 0"});
    p.send("TURN 1 0 0 1 0 4 3 40 8 45");
    EXPECT_EQ(p.answer().back(), "DONE MAX_TOKENS 1 4");
}

TEST(CliPipe, AFullContextEndsTheTurnWithContextFull) {
    PipeProcess p({"--model", demo_dir(), "--context", "10"});
    EXPECT_EQ(p.line(), "READY 10 64 48");
    // 10 - 8 = 2 tokens fit of the demo's "579<|end|>".
    p.send("TURN 50 0 0 1 0 8 1 2 3 40 4 5 6 45");
    EXPECT_EQ(p.answer(), (std::vector<std::string>{"TOKEN 5", "TOKEN 7", "DONE CONTEXT_FULL 2 9"}));
    // Ids that fill the context exactly are consumed, with no room for a token.
    p.send("TURN 50 0 0 1 0 10 1 2 3 40 4 5 6 45 5 7");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"DONE CONTEXT_FULL 0 10"});
    p.send("TURN 50 0 0 1 0 11 1 2 3 40 4 5 6 45 5 7 9");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"ERROR context_full 0 keep 0 + 11 ids exceed the context of 10"});
}

// SAVE answers with the position and the file's bytes, LOAD with the position; a refused one is
// an ERROR that changes nothing; a loaded session continues as the one that never stopped.
TEST(CliPipe, SaveAndLoadAnswerWithThePositionAndARefusedOneChangesNothing) {
    stormo::test::TempDir tmp;
    const std::string file = tmp.file("p.session");
    const std::string junk = tmp.file("junk.session");
    ASSERT_TRUE(stormo::write_file(junk, "STORMO? no\n").has_value());
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 8 1 2 3 40 4 5 6 45");
    ASSERT_EQ(p.answer().back(), "DONE STOP 4 11");
    p.send("SAVE " + file);
    const auto saved = p.answer();
    ASSERT_TRUE(std::filesystem::exists(file)) << saved.back();
    EXPECT_EQ(saved, std::vector<std::string>{"SAVED 11 " + std::to_string(std::filesystem::file_size(file))});
    p.send("RESET");
    for (const auto& [line, says] : std::vector<std::pair<std::string, std::string>>{
             {"LOAD " + tmp.file("none.session"), tmp.file("none.session")},
             {"LOAD " + junk, "not a stormo session file"},
             {"LOAD " + tmp.path(), tmp.path()}}) {
        p.send(line);
        const auto refused = p.answer();
        ASSERT_EQ(refused.size(), 1u);
        EXPECT_TRUE(refused[0].starts_with("ERROR load_failed 0 ")) << refused[0];
        EXPECT_NE(refused[0].find(says), std::string::npos) << refused[0];
        EXPECT_NE(refused[0].find("the session is as it was, at position 0"), std::string::npos) << refused[0];
    }
    p.send("SAVE " + tmp.file("no-dir/x.session"));
    const auto unsaved = p.answer();
    ASSERT_EQ(unsaved.size(), 1u);
    EXPECT_TRUE(unsaved[0].starts_with("ERROR save_failed 0 ")) << unsaved[0];
    EXPECT_NE(unsaved[0].find("no-dir"), std::string::npos) << unsaved[0];
    p.send("SAVE");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"ERROR bad_request 0 SAVE needs a path"});
    // After every refusal the session is still empty: a turn keeping 1 position is refused.
    p.send("TURN 12 1 0 1 0 1 5");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"ERROR bad_keep 0 keep 1 is beyond the session's position 0"});
    p.send("LOAD " + file);
    EXPECT_EQ(p.answer(), std::vector<std::string>{"LOADED 11"});
    p.send("TURN 12 11 0 1 0 9 48 1 7 8 40 7 9 8 45");  // the stop id, then "178+798="
    const auto next = p.answer();
    EXPECT_EQ(tokens_of(next), generate_tokens("1,2,3,40,4,5,6,45,5,7,9,48,1,7,8,40,7,9,8,45", "--max-tokens 12"));
    EXPECT_TRUE(next.back().starts_with("DONE STOP")) << next.back();
    p.send("SHUTDOWN");
    EXPECT_EQ(p.wait_exit(), 0);

    // Another context: a larger one loads (the file holds positions), one too small is refused.
    PipeProcess small({"--model", demo_dir(), "--context", "8"});
    ASSERT_TRUE(small.line().starts_with("READY 8 "));
    small.send("LOAD " + file);
    const auto refused = small.answer();
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_NE(refused[0].find("holds 11 positions, more than the context of 8"), std::string::npos) << refused[0];
    PipeProcess large({"--model", demo_dir(), "--context", "64"});
    ASSERT_TRUE(large.line().starts_with("READY 64 "));
    large.send("LOAD " + file);
    EXPECT_EQ(large.answer(), std::vector<std::string>{"LOADED 11"});
}

// A LOAD into a streaming store reads ahead the experts the saved session's last step chose
// (--stats counts them as prefetches), and the turn after it gives the tokens of a resident run.
TEST(CliPipe, ALoadIntoAStreamingStoreReadsAheadItsExpertsAndStatsSaySo) {
    stormo::test::TempDir tmp;
    const std::string file = tmp.file("p.session"), stats = tmp.file("stats.json");
    PipeProcess first({"--model", demo_dir()});
    ASSERT_TRUE(first.line().starts_with("READY"));
    first.send("TURN 2 0 0 1 0 8 1 2 3 40 4 5 6 45");
    const auto answer = first.answer();
    ASSERT_EQ(answer.back(), "DONE MAX_TOKENS 2 9");
    first.send("SAVE " + file);
    ASSERT_TRUE(first.answer()[0].starts_with("SAVED 9 "));
    first.send("TURN 12 9 0 1 0 1 " + answer[1].substr(6));
    const auto resident = first.answer();
    for (const bool streaming : {true, false}) {
        std::vector<std::string> args = {"--model", demo_dir(), "--stats", stats, "--threads", "1"};
        if (streaming) args.insert(args.end(), {"--expert-budget", "1MiB"});
        PipeProcess p(args);
        ASSERT_TRUE(p.line().starts_with("READY"));
        p.send("LOAD " + file);
        EXPECT_EQ(p.answer(), std::vector<std::string>{"LOADED 9"});
        p.send("TURN 12 9 0 1 0 1 " + answer[1].substr(6));
        EXPECT_EQ(p.answer(), resident) << (streaming ? "streaming" : "resident");
        p.send("SHUTDOWN");
        EXPECT_EQ(p.wait_exit(), 0);
        const auto issued = stats_field<uint64_t>(stats, "/prefetch_issued");
        const auto slots = stats_field<uint64_t>(stats, "/expert_slots");
        // Streaming: at least the read-ahead's (the last step's row: top_k experts a MoE layer).
        if (streaming) EXPECT_GE(issued, 2u * 4u);
        else EXPECT_EQ(issued, 0u);
        EXPECT_EQ(slots > 0, streaming) << "slots " << slots;
    }
}

// Speculating turns give the ids of `generate` without speculation, and --stats counts the drafts
// of every turn: with prompt lookup alone (no gate, so each turn drafts what it drafts in a
// process of its own) the sums of `generate --speculate context` over the same two problems.
TEST(CliPipe, SpeculatingTurnsGivePlainIdsAndStatsCountEveryTurnsDrafts) {
    stormo::test::TempDir tmp;
    const std::string stats = tmp.file("stats.json"), one = tmp.file("one.json");
    const std::vector<std::string> problems = {"12,24,25,34,44,32,15,11,14,34,45", "12,24,25,34,44,20,16,32,18,26,24,45"};
    PipeProcess p({"--model", demo_dir(), "--speculate", "context", "--stats", stats, "--threads", "1"});
    ASSERT_TRUE(p.line().starts_with("READY"));
    uint64_t drafted = 0, accepted = 0, verify_steps = 0;
    for (const std::string& ids : problems) {
        const size_t n = static_cast<size_t>(std::count(ids.begin(), ids.end(), ',')) + 1;
        std::string spaced = ids;
        std::replace(spaced.begin(), spaced.end(), ',', ' ');
        p.send("TURN 12 0 0 1 0 " + std::to_string(n) + " " + spaced);
        const auto answer = p.answer();
        ASSERT_TRUE(answer.back().starts_with("DONE STOP")) << answer.back();
        EXPECT_EQ(tokens_of(answer), generate_tokens(ids, "--max-tokens 12"));
        const auto r = stormo::test::run_cli("generate --model " + demo_dir() + " --ids " + ids +
                                             " --max-tokens 12 --speculate context --threads 1 --stats " + one);
        ASSERT_EQ(r.status, 0) << r.err;
        drafted += stats_field<uint64_t>(one, "/speculation/drafted");
        accepted += stats_field<uint64_t>(one, "/speculation/accepted");
        verify_steps += stats_field<uint64_t>(one, "/speculation/verify_steps");
    }
    ASSERT_GT(accepted, 0u) << "the copy problems must draft something right for this test to count";
    p.send("SHUTDOWN");
    EXPECT_EQ(p.wait_exit(), 0);
    EXPECT_EQ(stats_field<std::string>(stats, "/speculation/mode"), "context");
    EXPECT_EQ(stats_field<uint64_t>(stats, "/speculation/drafted"), drafted);
    EXPECT_EQ(stats_field<uint64_t>(stats, "/speculation/accepted"), accepted);
    EXPECT_EQ(stats_field<uint64_t>(stats, "/speculation/verify_steps"), verify_steps);
}

TEST(CliPipe, AModelThatCannotLoadSaysSoOnTheProtocolAndExitsOne) {
    const auto r = stormo::test::run_cli("pipe --model /nonexistent/model </dev/null");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.out.starts_with("ERROR load 1 ")) << r.out;
    EXPECT_NE(r.out.find("/nonexistent/model"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("stormo: "), std::string::npos);
}

}  // namespace
}  // namespace stormo::testing

// How `run`, `chat` and `serve` size the context when --context does not: `run` to what its
// message and --max-tokens need, `chat` and `serve` as long as the memory allows up to the model's
// max_position_embeddings; --verbose says which and why. A turn that fills the context says so,
// and outside `chat` no error about the context mentions /reset. The choice itself:
// choose_context (runtime/memory_plan.hpp).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "runtime/memory_plan.hpp"
#include "safetensors_writer.hpp"

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::run_command;

std::string demo(const std::string& name) { return "'" + std::string(STORMO_SOURCE_DIR) + "/models/" + name + "'"; }

TEST(CliContext, RunSizesItToTheMessageAndMaxTokens) {
    // "123+456=" is 8 tokens with the demo's template.
    const CommandResult r = run_cli("run " + demo("gpt-oss-demo") + " '123+456=' -n 24 --verbose");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "579\n");
    EXPECT_NE(r.err.find("context 32 (the context the prompt + --max-tokens need)"), std::string::npos) << r.err;
}

TEST(CliContext, ChatTakesWhatTheModelAllowsWhenTheMemoryHoldsIt) {
    stormo::test::TempDir tmp;
    stormo::test::write_bytes(tmp.file("in.txt"), std::string("123+456=\n"));
    // The demos' KV is a few KiB a position: their whole max_position_embeddings fits.
    for (const auto& [model, positions] : {std::pair{"gpt-oss-demo", "131072"}, std::pair{"qwen3-moe-demo", "40960"}}) {
        const CommandResult r = run_cli("chat " + demo(model) + " --verbose < '" + tmp.file("in.txt") + "'");
        EXPECT_EQ(r.status, 0) << r.err;
        EXPECT_NE(r.out.find("579"), std::string::npos) << r.out;
        EXPECT_NE(r.err.find(std::string("context ") + positions + " (chosen: the model's max_position_embeddings " + positions),
                  std::string::npos)
            << model << ": " << r.err;
    }
}

TEST(CliContext, ServeChoosesItAndSaysSo) {
    stormo::test::TempDir tmp;
    const std::string err = tmp.file("err");
    // Started, read until ready (at most 60 s), stopped with SIGTERM as a person's Ctrl-C would.
    const CommandResult r = run_command(
        "sh -c \"'" + std::string(STORMO_CLI) + "' serve " + demo("qwen3-moe-demo") + " --port 0 --parallel 1 -v 2>'" + err +
        "' & pid=\\$!; for i in \\$(seq 600); do grep -q 'ready:' '" + err + "' && break; sleep 0.1; done; kill -TERM \\$pid; wait \\$pid\"");
    EXPECT_EQ(r.status, 0) << r.err;
    const std::string log = stormo::test::slurp(err);
    EXPECT_NE(log.find("context 40960 (chosen: the model's max_position_embeddings 40960"), std::string::npos) << log;
    EXPECT_NE(log.find("ready: qwen3-moe-demo, context 40960 tokens, 1 slot"), std::string::npos) << log;
}

TEST(CliContext, ARunThatFillsTheContextSaysSoWithoutMentioningReset) {
    const CommandResult full = run_cli("run " + demo("gpt-oss-demo") + " '123+456=' -c 10");
    EXPECT_EQ(full.status, 0) << full.err;
    EXPECT_EQ(full.out, "57\n");
    EXPECT_NE(full.err.find("context full (10 positions; --context raises it)"), std::string::npos) << full.err;
    EXPECT_EQ(full.err.find("token limit"), std::string::npos) << full.err;
    EXPECT_EQ(full.err.find("/reset"), std::string::npos) << full.err;

    const CommandResult refused = run_cli("run " + demo("gpt-oss-demo") + " '123+456=' -c 8");
    EXPECT_EQ(refused.status, 1) << refused.err;
    EXPECT_NE(refused.err.find("the conversation is 8 tokens, the context holds 8 (--context raises it)"), std::string::npos)
        << refused.err;
    EXPECT_EQ(refused.err.find("/reset"), std::string::npos) << refused.err;

    // A limit of --max-tokens is not a full context.
    const CommandResult short_answer = run_cli("run " + demo("gpt-oss-demo") + " '123+456=' -n 2");
    EXPECT_EQ(short_answer.out, "57\n");
    EXPECT_NE(short_answer.err.find("(--max-tokens reached)"), std::string::npos) << short_answer.err;
    EXPECT_EQ(short_answer.err.find("context full"), std::string::npos) << short_answer.err;
}

// ---- choose_context ----

// A model whose KV is 4 KiB a position (or 256 KiB: `wide`).
stormo::ContextRequest request(uint64_t available, uint64_t experts, bool wide = false) {
    static const std::vector<stormo::KvBufferDecl> kv{stormo::KvBufferDecl{"kv", 1024, 0}};
    static const std::vector<stormo::KvBufferDecl> wide_kv{stormo::KvBufferDecl{"kv", 65536, 0}};
    stormo::ContextRequest r;
    r.kv = wide ? std::span<const stormo::KvBufferDecl>(wide_kv) : std::span<const stormo::KvBufferDecl>(kv);
    r.max_positions = 131072;
    r.expert_bytes = experts;
    r.available = stormo::AvailableMemory{available, "test"};
    return r;
}

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(ChooseContext, TheModelsLimitWhenItsKvFitsBesideEveryExpert) {
    const stormo::ContextChoice c = stormo::choose_context(request(64 * kGiB, 8 * kGiB));
    EXPECT_EQ(c.context, 131072u);
    EXPECT_NE(c.reason.find("max_position_embeddings 131072"), std::string::npos) << c.reason;
}

TEST(ChooseContext, AnEighthOfTheRoomWhenTheExpertsDoNotFit) {
    // 16 GiB available, reserve 512 MiB + 5%: about 14.7 GiB of room; an eighth is about 1.84 GiB
    // of 256 KiB positions (7536), cut to whole blocks of 256.
    const stormo::ContextRequest r = request(16 * kGiB, 100 * kGiB, true);
    const stormo::ContextChoice c = stormo::choose_context(r);
    const uint64_t room = 16 * kGiB - stormo::memory_reserve(16 * kGiB);
    EXPECT_EQ(c.context, room / 8 / (256 * 1024) / 256 * 256);
    EXPECT_EQ(c.context, 7424u);
    EXPECT_LE(stormo::kv_cache_bytes(r.kv, c.context), room / 8);
    EXPECT_NE(c.reason.find("chosen from memory"), std::string::npos) << c.reason;
}

TEST(ChooseContext, NeverBelowTheRunsNeedNorAboveTheModelsLimit) {
    stormo::ContextRequest r = request(kGiB, 100 * kGiB);
    r.need = 100000;
    EXPECT_EQ(stormo::choose_context(r).context, 100000u);
    r = request(1024 * kGiB, 0);
    r.max_positions = 0;  // no limit in config.json: the fallback
    EXPECT_EQ(stormo::choose_context(r).context, 4096u);
    r = request(64 * kGiB, 8 * kGiB);
    r.sequences = 4;  // four slots share the room
    EXPECT_EQ(stormo::choose_context(r).context, 131072u);
    r = request(4 * kGiB, 100 * kGiB, true);
    const size_t one = stormo::choose_context(r).context;
    EXPECT_LT(one, 131072u);
    r.sequences = 4;
    EXPECT_LE(stormo::choose_context(r).context * 4, one + 4 * 256);
}

}  // namespace

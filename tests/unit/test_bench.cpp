// The benchmark machinery: the bandwidth probes, the decode traffic from the tensor census, the
// report's arithmetic, a run over the tiny synthetic model, and `stormo bench --json` with every
// key the contract names.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>

#include "cli_runner.hpp"
#include "compute/worker_pool.hpp"
#include "oracle_support.hpp"
#include "safetensors_writer.hpp"
#include "tools/bandwidth.hpp"
#include "tools/bench.hpp"
#include "tools/synth.hpp"

namespace stormo::testing {
namespace {

using stormo::test::TempDir;

std::string write_tiny(const TempDir& tmp, uint64_t seed = 0) {
    synth::SynthOptions o;
    o.preset = "gpt-oss-tiny";
    o.seed = seed;
    auto plan = synth::plan_synth(o);
    EXPECT_TRUE(plan.has_value());
    const std::string dir = tmp.file("tiny");
    auto w = synth::write_synth(*plan, dir, synth::WriteOptions{});
    EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message);
    return dir;
}

const Family* family_of(const Engine& engine) {
    auto f = engine_family(engine);
    EXPECT_TRUE(f.has_value()) << (f ? "" : f.error().message);
    return f ? *f : nullptr;
}

TEST(Bench, RamProbeReportsAPlausibleBandwidth) {
    WorkerPool pool(2);
    auto r = measure_ram_read_bandwidth(pool, uint64_t{32} << 20, 2);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r->buffer_bytes, uint64_t{32} << 20);
    EXPECT_EQ(r->repeats, 2);
    EXPECT_EQ(r->threads, 2u);
    EXPECT_GT(r->bytes_per_s, 1e8);   // slower than 100 MB/s is no RAM
    EXPECT_LT(r->bytes_per_s, 1e13);  // faster than 10 TB/s means the reads were optimised away
    EXPECT_LE(r->median_bytes_per_s, r->bytes_per_s);
    EXPECT_NE(r->checksum, 0u);

    auto small = measure_ram_read_bandwidth(pool, 1000, 1);
    ASSERT_FALSE(small.has_value());
    EXPECT_NE(small.error().message.find("1 MiB"), std::string::npos);
    EXPECT_FALSE(measure_ram_read_bandwidth(pool, uint64_t{1} << 20, 0).has_value());
}

TEST(Bench, RamProbeTriesEveryStreamCountWithThePluginsLoop) {
    // The loop of the kernels this CPU selects (the widest loads), 1, 2 and 4 streams per thread:
    // the best pass is reported with the stream count that gave it.
    auto engine = try_open_engine(fixture_dir("gpt_oss"));
    ASSERT_TRUE(engine) << engine.error().message;
    WorkerPool pool(2);
    RamProbeOptions o;
    o.bytes = uint64_t{24} << 20;
    o.repeats = 2;
    o.reduce = (*engine)->kernels().xor_reduce;
    o.loop = (*engine)->kernels_name();
    auto r = measure_ram_read_bandwidth(pool, o);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r->passes, 6);  // 2 rounds x 3 stream counts
    EXPECT_TRUE(r->streams == 1 || r->streams == 2 || r->streams == 4) << r->streams;
    EXPECT_EQ(r->buffer_bytes, uint64_t{24} << 20);  // 2 stripes of a whole number of 4-slice units
    EXPECT_EQ(r->loop, (*engine)->kernels_name());
    EXPECT_GT(r->bytes_per_s, 1e8);
    EXPECT_LE(r->median_bytes_per_s, r->bytes_per_s);
    // The same buffer contents through the reference loop give the same checksum.
    RamProbeOptions ref = o;
    ref.reduce = nullptr;
    auto plain = measure_ram_read_bandwidth(pool, ref);
    ASSERT_TRUE(plain.has_value());
    EXPECT_EQ(plain->checksum, r->checksum);
    EXPECT_EQ(plain->loop, "reference");
    o.streams = {};
    EXPECT_FALSE(measure_ram_read_bandwidth(pool, o).has_value());
    o.streams = {3, 0};
    EXPECT_FALSE(measure_ram_read_bandwidth(pool, o).has_value());
}

TEST(Bench, ReportCountsTheHeadAsRead) {
    BenchRun run;
    run.prompt_tokens = 10;
    run.generated_tokens = 5;
    run.decode_steps = 4;
    run.decode_seconds = 2.0;
    DecodeTraffic traffic;
    traffic.dense_bytes = 1000 + 800;  // 800 of them the head: 100 rows of 8 bytes
    traffic.head_bytes = 800;
    traffic.head_rows = 100;
    RamBandwidth ram;
    ram.bytes_per_s = 1000.0;
    // 3 of 4 decode steps read by bound (a copy of 250 bytes), 2 + 3 + 1 exact rows, 1 full step.
    run.decode_bounded_head_steps = 3;
    run.decode_head_rows_exact = 6 + 100;
    run.compact_head_bytes = 250;
    const BenchReport r = make_bench_report(run, traffic, ram, DiskBandwidth{});
    const double head = (3.0 * 250.0 + 106.0 * 8.0) / 4.0;
    EXPECT_DOUBLE_EQ(r.head_bytes_read_per_token, head);
    EXPECT_DOUBLE_EQ(r.head_exact_rows_per_token, 106.0 / 4.0);
    EXPECT_EQ(r.bytes_touched_per_token, 1000u + static_cast<uint64_t>(head + 0.5));
    EXPECT_DOUBLE_EQ(r.memory_bound_tokens_per_s, 1000.0 / static_cast<double>(r.bytes_touched_per_token));
}

TEST(Bench, DiskProbeReadsTheExpertRanges) {
    TempDir tmp;
    auto engine = open_engine(write_tiny(tmp));
    ASSERT_TRUE(engine);
    const Family* family = family_of(*engine);
    ASSERT_NE(family, nullptr);
    const auto found = expert_file_ranges(engine->source(), *family);
    ASSERT_TRUE(found.has_value()) << found.error().message;
    const std::vector<FileRange>& ranges = *found;
    ASSERT_EQ(ranges.size(), 4u * 6u);  // 4 layers x 6 MXFP4 parts
    uint64_t expert_total = 0;
    for (const auto& r : ranges) expert_total += r.nbytes;

    DiskReadOptions o;
    o.bytes = uint64_t{1} << 20;
    o.block = uint64_t{256} << 10;
    o.in_flight = 3;
    auto direct = measure_disk_read_bandwidth(ranges, o);
    ASSERT_TRUE(direct.has_value()) << direct.error().message;
    EXPECT_GE(direct->bytes_read, o.bytes);
    EXPECT_LE(direct->bytes_read, o.bytes + o.block);
    EXPECT_GT(direct->bytes_per_s, 0.0);
    EXPECT_EQ(direct->direct_io, direct->note.empty());
    EXPECT_EQ(direct->passes, 3);
    EXPECT_LE(direct->median_bytes_per_s, direct->bytes_per_s);

    o.direct_io = false;
    o.bytes = uint64_t{1} << 40;  // more than there is: capped by the ranges
    auto buffered = measure_disk_read_bandwidth(ranges, o);
    ASSERT_TRUE(buffered.has_value()) << buffered.error().message;
    EXPECT_FALSE(buffered->direct_io);
    EXPECT_NE(buffered->note.find("DONTNEED"), std::string::npos);
    // Every expert byte, each layer's contiguous expert tensors widened to whole 4 KiB blocks.
    EXPECT_GE(buffered->bytes_read + 4 * 8192, expert_total);
    EXPECT_LE(buffered->bytes_read, expert_total + 4 * 8192);

    o.block = 1000;
    auto bad_block = measure_disk_read_bandwidth(ranges, o);
    ASSERT_FALSE(bad_block.has_value());
    EXPECT_NE(bad_block.error().message.find("4096"), std::string::npos);
    const std::vector<FileRange> missing = {{tmp.file("no-such-shard.safetensors"), 0, 1 << 20}};
    auto no_file = measure_disk_read_bandwidth(missing, DiskReadOptions{});
    ASSERT_FALSE(no_file.has_value());
    EXPECT_NE(no_file.error().message.find("no-such-shard.safetensors"), std::string::npos);
}

TEST(Bench, DecodeTrafficFollowsTheCensus) {
    TempDir tmp;
    auto engine = open_engine(write_tiny(tmp));
    ASSERT_TRUE(engine);
    const Family* family = family_of(*engine);
    ASSERT_NE(family, nullptr);
    auto t = decode_traffic(engine->source(), *family);
    ASSERT_TRUE(t.has_value()) << t.error().message;
    uint64_t total = 0, experts = 0;
    for (const auto& info : engine->source().tensors()) {
        total += info.nbytes;
        if (info.name.find(".mlp.experts.") != std::string::npos) experts += info.nbytes;
    }
    const uint64_t embedding = 1024u * 256u * 2u, row = 256u * 2u;
    EXPECT_EQ(t->embedding_row_bytes, row);
    EXPECT_EQ(t->dense_bytes, total - experts - embedding + row);
    EXPECT_EQ(t->moe_layers, 4);
    EXPECT_EQ(t->n_experts, 8);
    EXPECT_EQ(t->top_k, 2);
    EXPECT_EQ(t->expert_bytes, experts / 32u);
    EXPECT_EQ(t->routed_bytes(), 2u * 4u * (experts / 32u));
    EXPECT_EQ(t->kv_bytes_per_position, 4u * 2u * 128u * sizeof(float));  // 4 layers x (K + V) x 2 heads x 64
    EXPECT_EQ(t->bytes_per_token(10.0), t->dense_bytes + t->routed_bytes() + 10u * t->kv_bytes_per_position);
    // The resident store holds exactly the expert tensors.
    EXPECT_EQ(engine->store().total_expert_bytes(), experts);
}

TEST(Bench, ReportArithmetic) {
    BenchRun run;
    run.prompt_tokens = 10;
    run.generated_tokens = 5;
    run.decode_steps = 4;
    run.prefill_seconds = 2.0;
    run.decode_seconds = 2.0;
    run.before.hits = 3;
    run.after_prefill = {.hits = 13, .misses = 10, .bytes_read = 1000, .read_wait_seconds = 0.5};
    run.after = {.hits = 43, .misses = 20, .bytes_read = 5000, .read_wait_seconds = 1.0};
    run.decode_times.attention_seconds = 0.4;
    run.decode_times.moe_seconds = 1.2;
    run.decode_times.head_seconds = 0.2;
    DecodeTraffic traffic;
    traffic.dense_bytes = 100;
    traffic.expert_bytes = 10;
    traffic.moe_layers = 2;
    traffic.top_k = 2;
    traffic.kv_bytes_per_position = 1;
    RamBandwidth ram;
    ram.bytes_per_s = 1000.0;
    DiskBandwidth disk;
    disk.bytes_per_s = 2000.0;

    const BenchReport r = make_bench_report(run, traffic, ram, disk);
    EXPECT_DOUBLE_EQ(r.prefill_tokens_per_s, 5.0);
    EXPECT_DOUBLE_EQ(r.decode_tokens_per_s, 2.0);
    EXPECT_DOUBLE_EQ(r.prefill_expert_hit_rate, 0.5);  // 10 hits, 10 misses
    EXPECT_DOUBLE_EQ(r.expert_hit_rate, 0.75);         // 30 hits, 10 misses
    EXPECT_DOUBLE_EQ(r.expert_bytes_read_per_token, 1000.0);
    EXPECT_DOUBLE_EQ(r.read_wait_share, 0.25);
    // 4 steps in 2 s: per step 0.1 attention, 0.3 FFN, 0.05 head, and the 0.05 left over.
    EXPECT_DOUBLE_EQ(r.decode_step.attention, 0.1);
    EXPECT_DOUBLE_EQ(r.decode_step.ffn, 0.3);
    EXPECT_DOUBLE_EQ(r.decode_step.head, 0.05);
    EXPECT_NEAR(r.decode_step.other, 0.05, 1e-15);
    EXPECT_DOUBLE_EQ(r.mean_decode_context, 12.5);     // steps attend over 11, 12, 13, 14 positions
    EXPECT_EQ(r.bytes_touched_per_token, 100u + 40u + 12u);
    EXPECT_DOUBLE_EQ(r.memory_bound_tokens_per_s, 1000.0 / 152.0);
    EXPECT_DOUBLE_EQ(r.memory_bound_ratio, 2.0 / (1000.0 / 152.0));
    ASSERT_TRUE(r.disk_bound_tokens_per_s.has_value());
    EXPECT_DOUBLE_EQ(*r.disk_bound_tokens_per_s, 2.0);
    EXPECT_DOUBLE_EQ(*r.disk_bound_ratio, 1.0);

    // Nothing read from disk while decoding: no disk bound.
    run.after.bytes_read = run.after_prefill.bytes_read;
    const BenchReport resident = make_bench_report(run, traffic, ram, disk);
    EXPECT_FALSE(resident.disk_bound_tokens_per_s.has_value());
    EXPECT_FALSE(resident.disk_bound_ratio.has_value());
}

// The probe between steps runs before every decode step, its time stays out of the decode's, and
// each step is paired with the probe right after it (the last step has none).
TEST(Bench, ProbesBetweenStepsPairEachStepWithTheNextProbe) {
    TempDir tmp;
    auto engine = open_engine(write_tiny(tmp, 9));
    ASSERT_TRUE(engine);
    BenchRequest request{12, 5, 3, {}};
    int calls = 0;
    request.probe_between_steps = [&calls] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        return 1e9 * ++calls;  // 1, 2, 3, 4 GB/s
    };
    auto run = run_bench(*engine, request);
    ASSERT_TRUE(run.has_value()) << run.error().message;
    EXPECT_EQ(calls, 4);  // before each of the 4 decode steps
    ASSERT_EQ(run->step_seconds.size(), 4u);
    ASSERT_EQ(run->step_probe_bytes_per_s.size(), 3u);
    EXPECT_EQ(run->step_probe_bytes_per_s[0], 2e9);  // the pass after step 1 (the first preceded it)
    double steps = 0.0;
    for (double t : run->step_seconds) {
        EXPECT_GT(t, 0.0);
        steps += t;
    }
    EXPECT_LT(run->decode_seconds, 0.120) << "the probes' 4 x 30 ms must stay out of the decode time";
    EXPECT_LE(steps, run->decode_seconds + 1e-3);

    DecodeTraffic traffic;
    traffic.dense_bytes = 1000;
    const BenchReport r = make_bench_report(*run, traffic, RamBandwidth{}, DiskBandwidth{});
    ASSERT_TRUE(r.paired_bound_ratio.has_value());
    std::vector<double> ratios;
    for (size_t i = 0; i < 3; ++i)
        ratios.push_back(static_cast<double>(r.bytes_touched_per_token) / run->step_seconds[i] / run->step_probe_bytes_per_s[i]);
    std::sort(ratios.begin(), ratios.end());
    EXPECT_DOUBLE_EQ(*r.paired_bound_ratio, ratios[1]);
    EXPECT_DOUBLE_EQ(*r.paired_probe_median_bytes_per_s, 3e9);
}

TEST(Bench, RunGeneratesExactlyTheTokensAsked) {
    TempDir tmp;
    auto engine = open_engine(write_tiny(tmp, 9));
    ASSERT_TRUE(engine);
    auto run = run_bench(*engine, BenchRequest{12, 5, 3, {}});
    ASSERT_TRUE(run.has_value()) << run.error().message;
    EXPECT_EQ(run->prompt_tokens, 12u);
    EXPECT_EQ(run->generated_tokens, 5u);
    EXPECT_EQ(run->decode_steps, 4u);
    EXPECT_GT(run->prefill_seconds, 0.0);
    EXPECT_GT(run->decode_seconds, 0.0);
    // Every position routes top_k experts in each of the 4 layers: prefill 12 rows, decode 4 steps.
    const uint64_t prefill = (run->after_prefill.hits + run->after_prefill.misses) - (run->before.hits + run->before.misses);
    const uint64_t decode = (run->after.hits + run->after.misses) - (run->after_prefill.hits + run->after_prefill.misses);
    EXPECT_GT(prefill, 0u);
    EXPECT_LE(prefill, 12u * 4u * 2u);
    EXPECT_EQ(decode, 4u * 4u * 2u);
    EXPECT_GT(run->peak_rss_bytes, 0u);
    // The decode steps' stage times are part of the run's and of the decode time.
    EXPECT_GT(run->decode_times.attention_seconds, 0.0);
    EXPECT_GT(run->decode_times.moe_seconds, 0.0);
    EXPECT_GT(run->decode_times.head_seconds, 0.0);
    EXPECT_LE(run->decode_times.attention_seconds, run->times.attention_seconds);
    EXPECT_LE(run->decode_times.moe_seconds, run->times.moe_seconds);
    EXPECT_LE(run->decode_times.attention_seconds + run->decode_times.moe_seconds + run->decode_times.head_seconds,
              run->decode_seconds);

    auto too_short = run_bench(*engine, BenchRequest{4, 1, 0, {}});
    ASSERT_FALSE(too_short.has_value());
    EXPECT_NE(too_short.error().message.find("--gen-tokens"), std::string::npos);
}

// The warm-up run (the default, as llama-bench's) goes before the measured one and stays out of
// its figures: the store's counters at the start already hold the warm-up's prefill and its one
// decode step, and the measured run still counts exactly its own lookups.
TEST(Bench, WarmUpRunsFirstAndStaysOutOfTheFigures) {
    TempDir tmp;
    auto engine = open_engine(write_tiny(tmp, 9));
    ASSERT_TRUE(engine);
    BenchRequest cold{12, 5, 3, {}};
    cold.warmup = false;
    auto first = run_bench(*engine, cold);
    ASSERT_TRUE(first.has_value()) << first.error().message;
    EXPECT_FALSE(first->warmed_up);
    auto warm = run_bench(*engine, BenchRequest{12, 5, 3, {}});
    ASSERT_TRUE(warm.has_value()) << warm.error().message;
    EXPECT_TRUE(warm->warmed_up);
    const auto lookups = [](const ExpertStoreStats& s) { return s.hits + s.misses; };
    // The warm-up: 12 prompt rows and 1 decode step over 4 layers, top-2 each.
    const uint64_t warm_up = lookups(warm->before) - lookups(first->after);
    EXPECT_GT(warm_up, 4u * 2u);
    EXPECT_LE(warm_up, (12u + 1u) * 4u * 2u);
    EXPECT_EQ(lookups(warm->after) - lookups(warm->after_prefill), 4u * 4u * 2u);
    EXPECT_EQ(warm->generated_tokens, 5u);
}

using stormo::test::CommandResult;
using stormo::test::run_cli;

double number(const Json& j, const char* key) {
    const Json* v = j.find(key);
    EXPECT_NE(v, nullptr) << key;
    EXPECT_TRUE(v && v->is_number()) << key;
    return v && v->is_number() ? *v->as_double() : std::nan("");
}

TEST(Bench, JsonHasEveryContractKey) {
    TempDir tmp;
    const std::string dir = write_tiny(tmp, 1);
    const auto r = run_cli("bench --model " + dir +
                           " --prompt-tokens 8 --gen-tokens 4 --json --ram-probe 16MiB --ram-repeats 2 --disk-probe 1MiB"
                           " --disk-block 256KiB --threads 2");
    ASSERT_EQ(r.status, 0) << r.err;
    auto parsed = Json::parse(r.out, "bench --json");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message << "\n" << r.out;
    const Json& j = *parsed;
    EXPECT_GT(number(j, "prefill_tokens_per_s"), 0.0);
    EXPECT_GT(number(j, "decode_tokens_per_s"), 0.0);
    const double hit = number(j, "expert_hit_rate");
    EXPECT_GE(hit, 0.0);
    EXPECT_LE(hit, 1.0);
    EXPECT_GE(number(j, "expert_bytes_read_per_token"), 0.0);
    EXPECT_GT(number(j, "peak_rss_bytes"), 0.0);
    EXPECT_GT(number(j, "memory_bound_tokens_per_s"), 0.0);
    EXPECT_GT(number(j, "ram_read_bytes_per_s"), 0.0);
    // The probe runs before loading and again after the decode (its buffer at most --ram-probe's);
    // the bound takes the faster of the two.
    const double before = number(j, "ram_read_before_bytes_per_s"), after = number(j, "ram_read_after_bytes_per_s");
    EXPECT_GT(before, 0.0);
    EXPECT_GT(after, 0.0);
    EXPECT_EQ(number(j, "ram_read_bytes_per_s"), std::max(before, after));
    EXPECT_EQ(number(j, "ram_probe_after_bytes"), static_cast<double>(16 << 20));
    // A probe pass between every two decode steps, each step set against the pass after it.
    EXPECT_GT(number(j, "paired_bound_ratio"), 0.0);
    EXPECT_GT(number(j, "paired_probe_median_bytes_per_s"), 0.0);
    EXPECT_GT(number(j, "disk_read_bytes_per_s"), 0.0);
    EXPECT_GT(number(j, "bytes_touched_per_token"), 0.0);
    EXPECT_GT(number(j, "memory_bound_ratio"), 0.0);
    EXPECT_EQ(number(j, "gen_tokens"), 4.0);
    EXPECT_EQ(number(j, "prompt_tokens"), 8.0);
    EXPECT_EQ(number(j, "threads"), 2.0);
    double step = 0.0;
    for (const char* key : {"decode_step_attention_seconds", "decode_step_ffn_seconds", "decode_step_head_seconds",
                            "decode_step_other_seconds"}) {
        EXPECT_GE(number(j, key), 0.0) << key;
        step += number(j, key);
    }
    EXPECT_NEAR(step, 1.0 / number(j, "decode_tokens_per_s"), 1e-9);  // the parts make the whole step
    // The disk bound exists only when decoding read from disk.
    for (const char* key : {"disk_bound_tokens_per_s", "disk_bound_ratio"}) {
        const Json* v = j.find(key);
        ASSERT_NE(v, nullptr) << key;
        if (number(j, "expert_bytes_read_per_token") == 0.0) EXPECT_TRUE(v->is_null()) << key;
        else EXPECT_GT(*v->as_double(), 0.0) << key;
    }
    for (const char* key : {"expert_budget", "slots", "direct_io", "kernels", "read_wait_share", "disk_probe_passes"})
        EXPECT_NE(j.find(key), nullptr) << key;
}

TEST(Bench, TableAndRefusals) {
    TempDir tmp;
    const std::string dir = write_tiny(tmp, 1);
    const auto table = run_cli("bench --model " + dir + " --prompt-tokens 4 --gen-tokens 2 --ram-probe 8MiB --disk-probe 0");
    ASSERT_EQ(table.status, 0) << table.err;
    for (const char* label : {"prefill tokens/s", "decode tokens/s", "(memory)", "(disk)", "expert hit rate",
                              "RAM read bandwidth", "before loading", "after the decode", "peak RSS"})
        EXPECT_NE(table.out.find(label), std::string::npos) << label << "\n" << table.out;

    const auto one = run_cli("bench --model " + dir + " --gen-tokens 1");
    EXPECT_EQ(one.status, 2);
    EXPECT_NE(one.err.find("--gen-tokens"), std::string::npos) << one.err;
    const auto probe = run_cli("bench --model " + dir + " --ram-probe lots");
    EXPECT_EQ(probe.status, 2);
    EXPECT_NE(probe.err.find("--ram-probe"), std::string::npos) << probe.err;
    const auto after = run_cli("bench --model " + dir + " --ram-probe-after lots");
    EXPECT_EQ(after.status, 2);
    EXPECT_NE(after.err.find("--ram-probe-after"), std::string::npos) << after.err;

    // --ram-probe-after 0: the bound is the first probe's, and the JSON says the second did not run.
    const auto once = run_cli("bench --model " + dir +
                              " --prompt-tokens 4 --gen-tokens 3 --ram-probe 8MiB --ram-repeats 1 --ram-probe-after 0"
                              " --paired-probe 0 --disk-probe 0 --json");
    ASSERT_EQ(once.status, 0) << once.err;
    auto parsed = Json::parse(once.out, "bench --json");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message;
    EXPECT_EQ(number(*parsed, "ram_read_bytes_per_s"), number(*parsed, "ram_read_before_bytes_per_s"));
    for (const char* key : {"ram_read_after_bytes_per_s", "paired_bound_ratio", "paired_probe_median_bytes_per_s"}) {
        const Json* none = parsed->find(key);
        ASSERT_NE(none, nullptr) << key;
        EXPECT_TRUE(none->is_null()) << key;
    }
    const auto no_model = run_cli("bench --model " + tmp.file("absent"));
    EXPECT_NE(no_model.status, 0);
    EXPECT_NE(no_model.err.find("absent"), std::string::npos) << no_model.err;
}

}  // namespace
}  // namespace stormo::testing

#pragma once
// The messages ranks exchange (docs/distributed.md, "Wire"): byte strings MPI carries as they are.
// Every message starts with its kind; numbers are in the machine's byte order (the ranks of a run
// are one architecture: the engine identity they agree on names the kernels compiled for it).
// Decoding checks every length against the bytes received, so a truncated or foreign message is
// an error naming what was wrong, never a read past its end.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine_identity.hpp"
#include "stormo/error.hpp"

namespace stormo::wire {

// The MPI tags, one per message kind.
enum class Tag : int { identity = 1, verdict = 2, work = 3, result = 4, stop = 5, prefetch = 6, measure = 7 };

// Rank r > 0 to rank 0 at start: who it is.
struct IdentityMessage {
    std::string host;
    EngineIdentity identity;
    bool streams = false;  // its store streams its share from disk: prefetch hints help it
};

// Rank 0's answer: go on, or stop because identities differ (the reason names both).
struct VerdictMessage {
    bool accepted = false;
    std::string reason;
};

// Rank 0 to an owner, per MoE layer: the hidden rows (after the router's norm) that chose the
// owner's experts, each row once, and per expert the indices of its rows among them, in the
// router's (row, slot) order.
struct WorkMessage {
    int32_t layer = 0;
    uint32_t width = 0;
    std::vector<int32_t> experts;
    std::vector<std::vector<uint32_t>> rows;  // [expert]: indices into `hidden`'s rows
    std::vector<float> hidden;                // [rows, width]
};

// The owner's answer: per expert of the work, in its order, an output row for each of its rows;
// or what went wrong there.
struct ResultMessage {
    int32_t layer = 0;
    std::string error;           // non-empty: the owner failed, and this says why
    std::vector<float> outputs;  // [sum of the experts' rows, width]
};

// Rank 0 to an owner that streams, when a layer's router has spoken: the experts of the next MoE
// layer the owner holds that rank 0 predicts, so the owner starts reading them while rank 0
// computes. No answer; only bytes move into the owner's store.
struct PrefetchMessage {
    int32_t layer = 0;
    std::vector<int32_t> experts;
};

// Every rank to every rank at start under --rank-split weighted (one allgather): what it can give
// the experts. Carried in a slot of kMeasureBytes.
struct MeasureMessage {
    std::string host;
    uint64_t expert_memory = 0;     // bytes its store may use for experts
    bool holds_all = false;         // that memory holds every expert: it was not asked for its disk
    double disk_bytes_per_s = 0.0;  // its disk's read bandwidth on the model's expert files
};
inline constexpr size_t kMeasureBytes = 512;

std::vector<std::byte> encode(const IdentityMessage& m);
std::vector<std::byte> encode(const VerdictMessage& m);
std::vector<std::byte> encode(const WorkMessage& m);
std::vector<std::byte> encode(const ResultMessage& m);
std::vector<std::byte> encode(const PrefetchMessage& m);
// Exactly kMeasureBytes: the message, zeros after it (a host name is cut to fit).
std::vector<std::byte> encode(const MeasureMessage& m);

Expected<IdentityMessage> decode_identity(std::span<const std::byte> bytes);
Expected<VerdictMessage> decode_verdict(std::span<const std::byte> bytes);
Expected<WorkMessage> decode_work(std::span<const std::byte> bytes);
Expected<ResultMessage> decode_result(std::span<const std::byte> bytes);
Expected<PrefetchMessage> decode_prefetch(std::span<const std::byte> bytes);
Expected<MeasureMessage> decode_measure(std::span<const std::byte> bytes);

}  // namespace stormo::wire

#pragma once
// The MoE stage's seam to experts that other processes hold (expert parallelism: a rank of a
// distributed run keeps a share of every layer's routed experts). The stage hands the experts it
// does not hold, with the rows that chose each, to this interface before it computes its own, and
// collects their per-(row, slot) outputs afterwards; it reduces every row in the router's order
// as always, so where an expert was computed changes no bit. The runtime knows no transport: the
// MPI one lives in distributed/.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/family.hpp"

namespace stormo {

// One layer's experts that are computed elsewhere: each with the (row, slot) indices that chose it
// (row * top_k + slot, in increasing order), and the rows themselves (the normed input of the stage).
struct RemoteExpertWork {
    int layer = 0;
    size_t top_k = 0;
    std::span<const int32_t> experts;
    const std::vector<std::vector<size_t>>* users = nullptr;  // [expert]: the (row, slot) indices
    const Rows* rows = nullptr;
};

// What the exchanges cost so far (generate --stats prints them).
struct RemoteExpertStats {
    uint64_t layers = 0;          // MoE layer steps that had experts elsewhere
    uint64_t messages_sent = 0;   // work messages, one per owner and layer step
    uint64_t bytes_sent = 0;      // work messages' bytes
    uint64_t bytes_received = 0;  // result messages' bytes
    double wait_seconds = 0.0;    // time collect() waited after this process's own experts were done
    uint64_t hints = 0;           // prefetch hints sent, one per streaming owner and layer step
    uint64_t hinted_experts = 0;  // experts those hints named
};

// The exchanges between two readings of stats() (`then` taken first).
inline RemoteExpertStats difference(const RemoteExpertStats& now, const RemoteExpertStats& then) {
    return {now.layers - then.layers, now.messages_sent - then.messages_sent, now.bytes_sent - then.bytes_sent,
            now.bytes_received - then.bytes_received, now.wait_seconds - then.wait_seconds};
}

class RemoteExperts {
public:
    virtual ~RemoteExperts() = default;
    // Whether this process computes `expert` of `layer` from its own store.
    virtual bool holds(int layer, int32_t expert) const = 0;
    // Starts the work of the experts this process does not hold (every expert of work.experts is
    // one). Returns before they are computed; collect() waits for them.
    virtual Expected<void> send(const RemoteExpertWork& work) = 0;
    // Waits for the experts of the last send() and writes each one's output for the (row, slot)
    // index u at contributions[u * width, (u + 1) * width). A process that does not answer in time
    // is an error naming it.
    virtual Expected<void> collect(const RemoteExpertWork& work, std::span<float> contributions) = 0;
    // Whether an owner would act on prefetch(): its store streams (a resident one has every expert).
    virtual bool takes_hints() const = 0;
    // Tells the owners of `experts` of a later `layer` (none held here) to start reading them into
    // their stores; returns at once, and no answer comes. Only bytes move: no bit depends on it.
    virtual Expected<void> prefetch(int layer, std::span<const int32_t> experts) = 0;
    virtual RemoteExpertStats stats() const = 0;
};

}  // namespace stormo

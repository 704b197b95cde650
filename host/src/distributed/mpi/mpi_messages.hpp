#pragma once
// Whole messages over MPI_COMM_WORLD, and waits that end: a receive polls (MPI_Iprobe, then
// MPI_Recv of exactly the bytes announced) until its deadline, so a rank that died or hangs
// becomes an error here instead of a process stuck in MPI forever. Between polls the caller's
// thread backs off to a short sleep, so an idle rank leaves the cores to the ranks that compute
// (the test runs oversubscribe a 2-core machine).
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "distributed/wire.hpp"

namespace stormo::mpi {

using Clock = std::chrono::steady_clock;
using Deadline = std::optional<Clock::time_point>;  // nullopt: wait as long as it takes

struct Message {
    wire::Tag tag = wire::Tag::stop;
    std::vector<std::byte> bytes;
};

// The next message from `rank` with `tag` (nullopt: any tag); nullopt when the deadline passed first.
Expected<std::optional<Message>> receive_by(int rank, std::optional<wire::Tag> tag, Deadline deadline);
// The same, waiting as long as it takes.
Expected<Message> receive(int rank, std::optional<wire::Tag> tag);

// The first of `ranks` to have a message with `tag` waiting; nullopt when the deadline passed.
std::optional<int> first_waiting(std::span<const int> ranks, wire::Tag tag, Deadline deadline);

// A blocking send (small messages go eagerly; a large one waits for its receiver to post).
Expected<void> send(int rank, wire::Tag tag, std::span<const std::byte> bytes);

// A send that returns at once; wait_sent() finishes it by the deadline.
struct PendingSend {
    std::vector<std::byte> bytes;
    int rank = 0;
    MPI_Request request = MPI_REQUEST_NULL;
};
Expected<void> start_send(PendingSend& send, wire::Tag tag);
// false when the deadline passed first.
Expected<bool> wait_sent(PendingSend& send, Deadline deadline);
// Whether the send is done, without waiting (a failed one counts as done: its bytes are free).
bool sent(PendingSend& send);

// Every rank's `mine` (each exactly `mine.size()` bytes), in rank order: one allgather, every rank
// calling it at the same point; nullopt when the deadline passed first.
Expected<std::optional<std::vector<std::byte>>> allgather_by(std::span<const std::byte> mine, Deadline deadline);

// This process's host name as MPI reports it.
std::string processor_name();

}  // namespace stormo::mpi

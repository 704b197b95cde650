#include "distributed/mpi/mpi_messages.hpp"

#include <algorithm>
#include <thread>

#include <sys/prctl.h>

namespace stormo::mpi {
namespace {

// Within a decode a rank waits a layer's compute at a time (milliseconds): a sleep of up to a
// millisecond there adds its length to every layer exchange, so short waits sleep at most 20 us.
// A wait that has lasted longer (a rank idle between requests) sleeps up to a millisecond, so an
// idle rank costs its machine almost nothing.
constexpr auto kSpin = std::chrono::microseconds(200);
constexpr auto kShortWait = std::chrono::milliseconds(20);
constexpr auto kShortWaitPause = std::chrono::microseconds(20);
constexpr auto kLongWaitPause = std::chrono::microseconds(1000);

// Polls `ready` until it says yes or the deadline passes: without a pause for the first
// microseconds (an answer that is on its way), then with sleeps that grow as the wait lasts, which
// leave the cores to the ranks that compute.
template <class Ready>
bool poll_until(Ready ready, Deadline deadline) {
    // Linux lets a sleep end up to the thread's timer slack late (50 us by default, measured 72 us
    // for a 1 us sleep on a VM here, 16 us with the slack at its least): a waiting rank's wake-up
    // is on every layer exchange's path.
    prctl(PR_SET_TIMERSLACK, 1UL);
    const auto started = Clock::now();
    auto pause = std::chrono::microseconds(0);
    for (;;) {
        if (ready()) return true;
        const auto now = Clock::now();
        if (deadline && now >= *deadline) return false;
        if (now - started < kSpin) {
            std::this_thread::yield();  // a rank sharing cores with others lets them run
            continue;
        }
        const auto longest = now - started < kShortWait ? kShortWaitPause : kLongWaitPause;
        pause = std::clamp(pause * 2, std::chrono::microseconds(10), std::chrono::microseconds(longest));
        std::this_thread::sleep_for(pause);
    }
}

Error mpi_error(const char* call, int code, int rank) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    // A call that fails with a rank means that rank cannot be reached: the run cannot go on.
    const std::string peer = rank >= 0 ? " with rank " + std::to_string(rank) : std::string(" over every rank");
    return Error{ErrorKind::peer_lost, std::string(call) + peer + ": " + std::string(text, static_cast<size_t>(length))};
}

// Tests `request` until it completes (true) or the deadline passes (false); a failed test is an
// error naming `call` and the peer (-1: every rank).
Expected<bool> wait_request(MPI_Request& request, Deadline deadline, const char* call, int rank) {
    int failed = MPI_SUCCESS;
    const bool done = poll_until(
        [&] {
            int flag = 0;
            failed = MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
            return failed != MPI_SUCCESS || flag != 0;
        },
        deadline);
    if (failed != MPI_SUCCESS) return tl::unexpected(mpi_error(call, failed, rank));
    return done;
}

}  // namespace

Expected<std::optional<Message>> receive_by(int rank, std::optional<wire::Tag> tag, Deadline deadline) {
    const int wanted = tag ? static_cast<int>(*tag) : MPI_ANY_TAG;
    MPI_Status status;
    int failed = MPI_SUCCESS;
    const bool arrived = poll_until(
        [&] {
            int flag = 0;
            failed = MPI_Iprobe(rank, wanted, MPI_COMM_WORLD, &flag, &status);
            return failed != MPI_SUCCESS || flag != 0;
        },
        deadline);
    if (failed != MPI_SUCCESS) return tl::unexpected(mpi_error("MPI_Iprobe", failed, rank));
    if (!arrived) return std::optional<Message>{};
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Message message{static_cast<wire::Tag>(status.MPI_TAG), std::vector<std::byte>(static_cast<size_t>(count))};
    if (const int code = MPI_Recv(message.bytes.data(), count, MPI_BYTE, rank, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        code != MPI_SUCCESS)
        return tl::unexpected(mpi_error("MPI_Recv", code, rank));
    return std::optional<Message>(std::move(message));
}

Expected<Message> receive(int rank, std::optional<wire::Tag> tag) {
    STORMO_TRY_ASSIGN(auto message, receive_by(rank, tag, std::nullopt));
    if (!message) return fail(ErrorKind::internal, "a wait without a deadline ended without a message from rank " + std::to_string(rank));
    return std::move(*message);
}

std::optional<int> first_waiting(std::span<const int> ranks, wire::Tag tag, Deadline deadline) {
    std::optional<int> found;
    poll_until(
        [&] {
            for (int rank : ranks) {
                int flag = 0;
                MPI_Iprobe(rank, static_cast<int>(tag), MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                if (flag != 0) {
                    found = rank;
                    return true;
                }
            }
            return false;
        },
        deadline);
    return found;
}

Expected<void> send(int rank, wire::Tag tag, std::span<const std::byte> bytes) {
    if (const int code = MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, rank, static_cast<int>(tag), MPI_COMM_WORLD);
        code != MPI_SUCCESS)
        return tl::unexpected(mpi_error("MPI_Send", code, rank));
    return {};
}

Expected<void> start_send(PendingSend& send, wire::Tag tag) {
    if (const int code = MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, send.rank,
                                   static_cast<int>(tag), MPI_COMM_WORLD, &send.request);
        code != MPI_SUCCESS)
        return tl::unexpected(mpi_error("MPI_Isend", code, send.rank));
    return {};
}

Expected<bool> wait_sent(PendingSend& send, Deadline deadline) {
    return wait_request(send.request, deadline, "MPI_Test", send.rank);
}

bool sent(PendingSend& send) {
    int flag = 0;
    return MPI_Test(&send.request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag != 0;
}

Expected<std::optional<std::vector<std::byte>>> allgather_by(std::span<const std::byte> mine, Deadline deadline) {
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    std::vector<std::byte> all(mine.size() * static_cast<size_t>(ranks));
    MPI_Request request = MPI_REQUEST_NULL;
    const int count = static_cast<int>(mine.size());
    if (const int code = MPI_Iallgather(mine.data(), count, MPI_BYTE, all.data(), count, MPI_BYTE, MPI_COMM_WORLD, &request);
        code != MPI_SUCCESS)
        return tl::unexpected(mpi_error("MPI_Iallgather", code, -1));
    STORMO_TRY_ASSIGN(const bool done, wait_request(request, deadline, "MPI_Iallgather", -1));
    if (!done) return std::optional<std::vector<std::byte>>{};
    return std::optional<std::vector<std::byte>>(std::move(all));
}

std::string processor_name() {
    char name[MPI_MAX_PROCESSOR_NAME];
    int length = 0;
    MPI_Get_processor_name(name, &length);
    return std::string(name, static_cast<size_t>(length));
}

}  // namespace stormo::mpi

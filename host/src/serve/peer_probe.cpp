#include "serve/peer_probe.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace stormo::serve {

bool peer_closed(int fd) {
    if (fd < 0) return false;
    pollfd p{};
    p.fd = fd;
    p.events = POLLIN | POLLRDHUP;
    if (::poll(&p, 1, 0) <= 0) return false;  // nothing to read, no hang-up: still there
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP)) return true;
    // Readable: either bytes (a pipelined request: still there) or the end of the stream.
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace stormo::serve

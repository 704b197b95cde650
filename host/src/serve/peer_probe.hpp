#pragma once
// Whether the client at the other end of a connected socket has gone (closed or reset), asked
// without blocking and without taking any bytes it sent. Between two tokens this is what lets a
// request stop within one token of its client leaving.
namespace stormo::serve {

bool peer_closed(int fd);

}  // namespace stormo::serve

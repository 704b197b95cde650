// Names of error kinds, for messages and for the pipe protocol's ERROR line.
#include "stormo/error.hpp"

namespace stormo {

const char* to_string(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::invalid_argument: return "invalid_argument";
        case ErrorKind::io: return "io";
        case ErrorKind::format: return "format";
        case ErrorKind::missing: return "missing";
        case ErrorKind::mismatch: return "mismatch";
        case ErrorKind::unsupported: return "unsupported";
        case ErrorKind::plugin: return "plugin";
        case ErrorKind::config: return "config";
        case ErrorKind::resource: return "resource";
        case ErrorKind::internal: return "internal";
        case ErrorKind::peer_lost: return "peer_lost";
    }
    return "unknown";
}

}  // namespace stormo

#pragma once
// The HTTP side of `stormo serve`, on Boost.Beast: the listening socket, one thread per connection
// reading requests with caps on the header and body sizes and time limits, keep-alive, chunked
// streams; when every slot is taken, the connection that has waited longest for its request
// makes room for a new one; SIGTERM and SIGINT stop it. What a request means is the routes' business (ApiRoutes).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "serve/api_routes.hpp"
#include "stormo/error.hpp"

namespace stormo::serve {

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;  // 0: any free port (port() tells which)
    std::chrono::seconds timeout{30};        // to read a whole request, or to write one piece of a reply
    std::chrono::seconds header_timeout{5};  // to read a request's line and headers (and the keep-alive idle limit)
    uint32_t header_limit = 16 * 1024;       // bytes of request line and headers (every byte); more: 431
    uint64_t body_limit = 8u * 1024 * 1024;  // bytes of body; more: 413
    // Open at once. A new one past it takes the slot of the connection that has waited longest
    // for (or is still sending) its request; with none such, it is closed at once.
    size_t max_connections = 128;
};

class HttpServer {
public:
    // Binds and listens (an address in use or a bad host is an error naming it); serves nothing
    // until run().
    static Expected<std::unique_ptr<HttpServer>> bind(const HttpServerOptions& options, ApiRoutes& routes);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    uint16_t port() const;
    // Accepts and serves until SIGTERM, SIGINT or stop(); then stops accepting, calls on_stop
    // (which ends the generations), lets every connection finish its response, and returns.
    void run(const std::function<void()>& on_stop);
    // Ends run() from another thread, as a signal would.
    void stop();

private:
    struct Impl;
    explicit HttpServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace stormo::serve

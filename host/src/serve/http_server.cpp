#include "serve/http_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <list>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace stormo::serve {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// After refusing an oversized request the server reads (and drops) what the client is still
// sending for up to this long before closing, so the client reads the refusal instead of a reset.
constexpr std::chrono::seconds kDrainTime{2};
constexpr size_t kDrainBytes = size_t{64} << 20;

// One client connection, served on its own thread. Each Beast operation runs on the thread's own
// io_context with the stream's deadline, so a slow client times out however it stalls.
class Connection final : public ResponseSink {
public:
    Connection(tcp::socket::native_handle_type fd, const tcp::endpoint& local, const HttpServerOptions& options)
        : stream_(ioc_), options_(options) {
        beast::error_code ec;
        stream_.socket().assign(local.protocol(), fd, ec);
        fd_ = static_cast<int>(fd);
    }

    int native_handle() const override { return fd_; }

    // Reads the next request; an error code tells why there is none. One deadline covers the
    // whole request. A client that asks "Expect: 100-continue" (curl, for large bodies) is told to
    // go on once its headers passed their cap.
    beast::error_code read(http::request_parser<http::string_body>& parser) {
        parser.header_limit(options_.header_limit);
        parser.body_limit(options_.body_limit);
        stream_.expires_after(options_.timeout);
        beast::error_code ec = run_op(
            [&](auto handler) { http::async_read_header(stream_, buffer_, parser, std::move(handler)); }, nullptr, false);
        if (ec) return ec;
        if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
            http::response<http::empty_body> go_on{http::status::continue_, 11};
            ec = run_op([&](auto handler) { http::async_write(stream_, go_on, std::move(handler)); }, nullptr, false);
            if (ec) return ec;
        }
        if (parser.is_done()) return ec;
        return run_op([&](auto handler) { http::async_read(stream_, buffer_, parser, std::move(handler)); }, nullptr, false);
    }

    void set_keep_alive(bool keep_alive) { keep_alive_ = keep_alive; }

    bool send(const HttpResponse& r) override {
        http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
        res.set(http::field::server, "stormo");
        res.set(http::field::content_type, r.content_type);
        for (const auto& [name, value] : r.headers) res.set(name, value);
        res.body() = r.body;
        res.keep_alive(keep_alive_);
        announce_idle_limit(res);
        res.prepare_payload();
        return !run_op([&](auto handler) { http::async_write(stream_, res, std::move(handler)); });
    }

    bool begin_stream(int status, std::string_view content_type) override {
        http::response<http::empty_body> res{static_cast<http::status>(status), 11};
        res.set(http::field::server, "stormo");
        res.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
        res.set(http::field::cache_control, "no-cache");
        res.keep_alive(keep_alive_);
        announce_idle_limit(res);
        res.chunked(true);
        http::response_serializer<http::empty_body> serializer{res};
        return !run_op([&](auto handler) { http::async_write_header(stream_, serializer, std::move(handler)); });
    }

    bool send_chunk(std::string_view data) override {
        return !run_op([&](auto handler) {
            net::async_write(stream_, http::make_chunk(net::const_buffer(data.data(), data.size())), std::move(handler));
        });
    }

    bool end_stream() override {
        return !run_op([&](auto handler) { net::async_write(stream_, http::make_chunk_last(), std::move(handler)); });
    }

    // Reads and drops what the client still sends (bounded in time and bytes), then closes.
    void drain_and_close() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
        std::vector<char> sink(64 * 1024);
        size_t drained = 0;
        stream_.expires_after(kDrainTime);
        while (drained < kDrainBytes) {
            size_t n = 0;
            ec = run_op(
                [&](auto handler) { stream_.async_read_some(net::buffer(sink), std::move(handler)); }, &n, false);
            if (ec) break;
            drained += n;
        }
        close();
    }

    void close() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream_.close();
    }

private:
    // The next request's deadline starts when the server begins waiting for it, so --timeout is
    // also how long a kept-alive connection may stay idle. Saying so lets clients (undici, the
    // OpenAI client's fetch) retire idle connections first instead of reusing one the server is
    // closing.
    template <class Message>
    void announce_idle_limit(Message& res) const {
        if (keep_alive_) res.set(http::field::keep_alive, "timeout=" + std::to_string(options_.timeout.count()));
    }

    // Runs one asynchronous operation to its end on this thread, under the stream's deadline.
    template <class Start>
    beast::error_code run_op(Start&& start, size_t* transferred = nullptr, bool set_deadline = true) {
        if (set_deadline) stream_.expires_after(options_.timeout);
        beast::error_code result;
        start([&](beast::error_code ec, size_t n) {
            result = ec;
            if (transferred) *transferred = n;
        });
        ioc_.restart();
        ioc_.run();
        return result;
    }

    net::io_context ioc_;
    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    const HttpServerOptions& options_;
    int fd_ = -1;
    bool keep_alive_ = true;
};

HttpResponse plain_error(int status, const std::string& message, const char* code) {
    ApiError e;
    e.status = status;
    e.message = message;
    e.code = code;
    HttpResponse r;
    r.status = status;
    r.body = error_body(e);
    return r;
}

HttpRequest to_request(const http::request<http::string_body>& req) {
    HttpRequest out;
    out.method = std::string(req.method_string());
    const std::string target(req.target());
    out.path = target.substr(0, target.find('?'));
    if (auto it = req.find(http::field::authorization); it != req.end()) out.authorization = std::string(it->value());
    out.body = req.body();
    return out;
}

}  // namespace

struct HttpServer::Impl {
    struct Slot {
        std::thread thread;
        int fd = -1;
        bool idle = true;  // waiting for a request (guarded by Impl::mutex)
        std::atomic<bool> done{false};
    };

    HttpServerOptions options;
    ApiRoutes* routes = nullptr;
    net::io_context ioc;
    tcp::acceptor acceptor{ioc};
    net::signal_set signals{ioc, SIGTERM, SIGINT};
    tcp::endpoint local;

    std::mutex mutex;
    bool stopping = false;
    std::list<std::unique_ptr<Slot>> slots;

    void accept_next() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
            if (!ec) start_connection(std::move(socket));
            accept_next();
        });
    }

    void reap_locked() {
        for (auto it = slots.begin(); it != slots.end();) {
            if ((*it)->done.load()) {
                (*it)->thread.join();
                it = slots.erase(it);
            } else {
                ++it;
            }
        }
    }

    void start_connection(tcp::socket socket) {
        std::lock_guard lock(mutex);
        reap_locked();
        if (stopping || slots.size() >= options.max_connections) return;  // the socket closes here
        beast::error_code ec;
        socket.set_option(tcp::no_delay(true), ec);
        auto slot = std::make_unique<Slot>();
        Slot* s = slot.get();
        s->fd = socket.release(ec);
        if (ec) return;
        s->thread = std::thread([this, s] { serve(*s); });
        slots.push_back(std::move(slot));
    }

    // Marks the slot idle before a read; false when the server is stopping (then it closes).
    bool enter_idle(Slot& s) {
        std::lock_guard lock(mutex);
        if (stopping) return false;
        s.idle = true;
        return true;
    }

    void leave_idle(Slot& s) {
        std::lock_guard lock(mutex);
        s.idle = false;
    }

    void serve(Slot& slot) {
        Connection connection(slot.fd, local, options);
        for (;;) {
            if (!enter_idle(slot)) break;
            http::request_parser<http::string_body> parser;
            beast::error_code ec = connection.read(parser);
            leave_idle(slot);
            if (ec == http::error::body_limit || ec == http::error::header_limit) {
                const bool body = ec == http::error::body_limit;
                connection.set_keep_alive(false);
                connection.send(body ? plain_error(413, "the request body is larger than " + std::to_string(options.body_limit) + " bytes",
                                                   "body_too_large")
                                     : plain_error(431, "the request headers are larger than " +
                                                            std::to_string(options.header_limit) + " bytes",
                                                   "headers_too_large"));
                connection.drain_and_close();
                break;
            }
            if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
                ec == net::error::connection_reset || ec == net::error::operation_aborted) {
                connection.close();
                break;
            }
            if (ec) {  // malformed HTTP: say so once and close
                connection.set_keep_alive(false);
                connection.send(plain_error(400, "malformed HTTP request: " + ec.message(), "bad_http"));
                connection.close();
                break;
            }
            const http::request<http::string_body>& req = parser.get();
            bool keep_alive = req.keep_alive();
            {
                std::lock_guard lock(mutex);
                keep_alive = keep_alive && !stopping;
            }
            connection.set_keep_alive(keep_alive);
            const bool ok = routes->handle(to_request(req), connection);
            if (!ok || !keep_alive) {
                connection.close();
                break;
            }
        }
        slot.done.store(true);
    }

    void begin_stop() {
        beast::error_code ec;
        acceptor.close(ec);
        // Leaving the set gives SIGTERM and SIGINT back their default action: a second one ends
        // the process at once instead of waiting for the grace period.
        signals.cancel(ec);
        signals.clear(ec);
    }

    void finish_connections() {
        std::list<std::unique_ptr<Slot>> all;
        {
            std::lock_guard lock(mutex);
            stopping = true;
            // Idle connections are waiting for a request that will not be served: end their reads.
            for (auto& s : slots)
                if (s->idle && !s->done.load()) ::shutdown(s->fd, SHUT_RD);
            all.swap(slots);
        }
        for (auto& s : all) s->thread.join();
    }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

Expected<std::unique_ptr<HttpServer>> HttpServer::bind(const HttpServerOptions& options, ApiRoutes& routes) {
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->routes = &routes;
    beast::error_code ec;
    // An address, or a name such as localhost (its first address).
    tcp::resolver resolver(impl->ioc);
    const auto found = resolver.resolve(options.host, std::to_string(options.port),
                                        tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || found.empty())
        return fail(ErrorKind::invalid_argument, "--host " + options.host + ": no such address (" + ec.message() + ")");
    const tcp::endpoint endpoint = found.begin()->endpoint();
    const std::string where = options.host + ":" + std::to_string(options.port);
    impl->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) impl->acceptor.bind(endpoint, ec);
    if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return fail(ErrorKind::io, "cannot listen on " + where + ": " + ec.message());
    impl->local = impl->acceptor.local_endpoint(ec);
    if (ec) return fail(ErrorKind::io, "cannot listen on " + where + ": " + ec.message());
    return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->local.port(); }

void HttpServer::run(const std::function<void()>& on_stop) {
    Impl& impl = *impl_;
    impl.signals.async_wait([&impl](beast::error_code ec, int) {
        if (!ec) impl.begin_stop();
    });
    impl.accept_next();
    impl.ioc.run();
    // No more connections come; end the generations, then let every connection finish its reply.
    if (on_stop) on_stop();
    impl.finish_connections();
}

void HttpServer::stop() {
    Impl& impl = *impl_;
    net::post(impl.ioc, [&impl] { impl.begin_stop(); });
}

}  // namespace stormo::serve

#include "serve/http_server.hpp"

#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <list>
#include <mutex>
#include <optional>
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
// Room in a connection's read buffer past the header cap, for reading a body in pieces.
constexpr size_t kBodyReadBytes = 64 * 1024;
// After a request with a body this large, the memory its parsing and tokenizing freed is handed
// back to the system: glibc keeps freed blocks below its (adaptive, up to 32 MiB) mmap threshold
// in the thread's arena, so a few large requests would leave the server at their peak for good.
constexpr size_t kTrimAfterBody = size_t{1} << 20;

// One client connection, served on its own thread. Each Beast operation runs on the thread's own
// io_context with the stream's deadline, so a slow client times out however it stalls.
class Connection final : public ResponseSink {
public:
    Connection(tcp::socket::native_handle_type fd, const tcp::endpoint& local, const HttpServerOptions& options)
        : stream_(ioc_), buffer_(options.header_limit + kBodyReadBytes), options_(options) {
        beast::error_code ec;
        stream_.socket().assign(local.protocol(), fd, ec);
        fd_ = static_cast<int>(fd);
    }

    int native_handle() const override { return fd_; }

    // Reads the next request's line and headers. The head must arrive within --header-timeout of
    // when the server starts waiting for it (so a connection that sends nothing holds its slot only
    // that long) and the whole request within --timeout. A kept-alive connection, idle after a
    // response, gets twice the limit it announces (announce_idle_limit): a client that reuses it
    // just before the announced limit, its request delayed by a busy machine, is not cut off
    // mid-request (the soak saw about one request in 20,000 fail so when both limits were one).
    // Beast 1.74 checks its header limit only against the bytes it has not parsed yet, so fields
    // parsed from earlier reads would escape it: every byte of the head is counted here, and no
    // read takes more than the cap leaves.
    beast::error_code read_head(http::request_parser<http::string_body>& parser, bool kept_alive) {
        parser.header_limit(options_.header_limit);
        parser.body_limit(options_.body_limit);
        const auto now = std::chrono::steady_clock::now();
        request_deadline_ = now + options_.timeout;
        const auto head_limit = kept_alive ? 2 * options_.header_timeout : options_.header_timeout;
        stream_.expires_at(std::min(request_deadline_, now + head_limit));
        size_t parsed = 0;
        for (;;) {
            beast::error_code ec;
            if (buffer_.size() > 0) {
                const size_t used = parser.put(buffer_.data(), ec);
                buffer_.consume(used);
                parsed += used;
                if (parser.is_header_done())
                    return parsed > options_.header_limit ? beast::error_code(http::error::header_limit) : beast::error_code();
                if (ec && ec != http::error::need_more) return ec;
            }
            const size_t seen = parsed + buffer_.size();
            if (seen > options_.header_limit) return http::error::header_limit;
            size_t n = 0;
            ec = run_op(
                [&](auto handler) {
                    stream_.async_read_some(buffer_.prepare(options_.header_limit + 1 - seen), std::move(handler));
                },
                &n, false);
            if (ec) return ec;
            buffer_.commit(n);
        }
    }

    // Reads the body of a request whose head read_head() read, within what is left of --timeout.
    // A client that asks "Expect: 100-continue" (curl, for large bodies) is told to go on first.
    beast::error_code read_body(http::request_parser<http::string_body>& parser) {
        stream_.expires_at(request_deadline_);
        beast::error_code ec;
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
        if (!r.content_type.empty()) res.set(http::field::content_type, r.content_type);  // a 204 has none
        for (const auto& [name, value] : r.headers) res.set(name, value);
        res.body() = r.body;
        res.keep_alive(keep_alive_);
        announce_idle_limit(res);
        res.prepare_payload();
        return !run_op([&](auto handler) { http::async_write(stream_, res, std::move(handler)); });
    }

    bool begin_stream(int status, std::string_view content_type, const HttpHeaders& headers) override {
        http::response<http::empty_body> res{static_cast<http::status>(status), 11};
        res.set(http::field::server, "stormo");
        res.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
        res.set(http::field::cache_control, "no-cache");
        for (const auto& [name, value] : headers) res.set(name, value);
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
    // The next request's deadlines start when the server begins waiting for it, so the head's
    // limit also bounds how long a kept-alive connection may stay idle (read_head gives it twice
    // this). Saying so lets clients (undici, the OpenAI client's fetch) retire idle connections
    // first instead of reusing one the server is closing.
    template <class Message>
    void announce_idle_limit(Message& res) const {
        const auto idle = std::min(options_.timeout, options_.header_timeout);
        if (keep_alive_) res.set(http::field::keep_alive, "timeout=" + std::to_string(idle.count()));
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
    // Bounded: a chunked body's trailer fields are held here until they end, so they cannot grow
    // past it (the body's own bytes go to the body as they come).
    beast::flat_buffer buffer_;
    const HttpServerOptions& options_;
    std::chrono::steady_clock::time_point request_deadline_;
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

// The body is moved, not copied: it may be --max-body bytes.
HttpRequest to_request(http::request<http::string_body>&& req) {
    HttpRequest out;
    out.method = std::string(req.method_string());
    const std::string target(req.target());
    out.path = target.substr(0, target.find('?'));
    if (auto it = req.find(http::field::authorization); it != req.end()) out.authorization = std::string(it->value());
    if (auto it = req.find(http::field::origin); it != req.end()) out.origin = std::string(it->value());
    if (auto it = req.find(http::field::access_control_request_headers); it != req.end())
        out.requested_headers = std::string(it->value());
    out.body = std::move(req.body());
    return out;
}

// The request's transfer codings when they are anything but chunked alone (Beast reads
// "gzip, chunked" as chunked and would hand on the gzip bytes as the body; a coding it does not
// end with chunked leaves the body's framing unknown). Nothing when the header is absent or is
// just chunked.
std::optional<std::string> unsupported_transfer_coding(const http::request<http::string_body>& req) {
    std::string all;
    const auto [first, last] = req.equal_range(http::field::transfer_encoding);
    for (auto it = first; it != last; ++it) {
        if (!all.empty()) all += ", ";
        all += std::string(it->value());
    }
    if (all.empty()) return std::nullopt;
    size_t codings = 0;
    bool chunked = false;
    for (size_t begin = 0; begin <= all.size();) {
        size_t end = all.find(',', begin);
        if (end == std::string::npos) end = all.size();
        std::string_view coding(all.data() + begin, end - begin);
        while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
        while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
        if (!coding.empty()) {
            ++codings;
            chunked = beast::iequals(beast::string_view(coding.data(), coding.size()), "chunked");
        }
        begin = end + 1;
    }
    if (codings == 1 && chunked) return std::nullopt;
    return all;
}

}  // namespace

struct HttpServer::Impl {
    struct Slot {
        std::thread thread;
        int fd = -1;
        // Waiting for or reading a request, since `waiting_since`; such a slot may be taken for a
        // new connection when all are in use (guarded by Impl::mutex, as is `evicted`).
        bool idle = true;
        std::chrono::steady_clock::time_point waiting_since = std::chrono::steady_clock::now();
        bool evicted = false;
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

    // Joins the finished connections; returns how many of the others still hold a slot.
    size_t reap_locked() {
        size_t held = 0;
        for (auto it = slots.begin(); it != slots.end();) {
            if ((*it)->done.load()) {
                (*it)->thread.join();
                it = slots.erase(it);
            } else {
                if (!(*it)->evicted) ++held;
                ++it;
            }
        }
        return held;
    }

    // Makes room for a new connection by ending the one that has waited longest for its request
    // (or has been sending it longest): under a flood of connections that send nothing, or send
    // slowly, a client that sends its request at once still gets in, /health included. A
    // connection with a request being answered is never taken. False when every slot is busy.
    bool evict_longest_waiting_locked() {
        Slot* oldest = nullptr;
        for (auto& s : slots)
            if (s->idle && !s->evicted && !s->done.load() && (!oldest || s->waiting_since < oldest->waiting_since))
                oldest = s.get();
        if (!oldest) return false;
        oldest->evicted = true;
        // Its thread is blocked in a read, which this ends; the thread then closes the socket.
        ::shutdown(oldest->fd, SHUT_RDWR);
        return true;
    }

    void start_connection(tcp::socket socket) {
        std::lock_guard lock(mutex);
        const size_t held = reap_locked();
        if (stopping) return;  // the socket closes here
        if (held >= options.max_connections && !evict_longest_waiting_locked()) return;
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
        if (stopping || s.evicted) return false;
        s.idle = true;
        s.waiting_since = std::chrono::steady_clock::now();
        return true;
    }

    // False when the slot was taken for another connection while it read.
    bool leave_idle(Slot& s) {
        std::lock_guard lock(mutex);
        s.idle = false;
        return !s.evicted;
    }

    // Answers a request the HTTP layer refuses and closes the connection, reading what the client
    // still sends for a moment so it reads the refusal instead of a reset.
    static void refuse_and_close(Connection& connection, int status, const std::string& message, const char* code) {
        connection.set_keep_alive(false);
        connection.send(plain_error(status, message, code));
        connection.drain_and_close();
    }

    // Reads one request; false when there is none to answer (the connection is closed then).
    bool read_request(Slot& slot, Connection& connection, http::request_parser<http::string_body>& parser,
                      bool kept_alive) {
        beast::error_code ec = connection.read_head(parser, kept_alive);
        if (!ec && parser.is_header_done()) {
            if (auto coding = unsupported_transfer_coding(parser.get())) {
                leave_idle(slot);
                refuse_and_close(connection, 501,
                                 "Transfer-Encoding: " + *coding + " is not supported: only chunked is",
                                 "unsupported_transfer_encoding");
                return false;
            }
            ec = connection.read_body(parser);
        }
        if (!leave_idle(slot)) {
            connection.close();
            return false;
        }
        if (ec == http::error::body_limit) {
            refuse_and_close(connection, 413, "the request body is larger than " + std::to_string(options.body_limit) + " bytes",
                             "body_too_large");
            return false;
        }
        if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
            refuse_and_close(connection, 431,
                             "the request headers are larger than " + std::to_string(options.header_limit) + " bytes",
                             "headers_too_large");
            return false;
        }
        if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
            ec == net::error::connection_reset || ec == net::error::operation_aborted) {
            connection.close();
            return false;
        }
        if (ec) {  // malformed HTTP: say so once and close
            connection.set_keep_alive(false);
            connection.send(plain_error(400, "malformed HTTP request: " + ec.message(), "bad_http"));
            connection.close();
            return false;
        }
        return true;
    }

    void serve(Slot& slot) {
        Connection connection(slot.fd, local, options);
        for (bool kept_alive = false;; kept_alive = true) {
            if (!enter_idle(slot)) {
                connection.close();
                break;
            }
            http::request_parser<http::string_body> parser;
            if (!read_request(slot, connection, parser, kept_alive)) break;
            http::request<http::string_body> req = parser.release();
            bool keep_alive = req.keep_alive();
            {
                std::lock_guard lock(mutex);
                keep_alive = keep_alive && !stopping;
            }
            connection.set_keep_alive(keep_alive);
            const bool large = req.body().size() >= kTrimAfterBody;
            const bool ok = routes->handle(to_request(std::move(req)), connection);
            if (large) ::malloc_trim(0);
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

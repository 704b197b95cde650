#pragma once
// What the routes see of HTTP, without the HTTP library: a request already read and bounded, and
// a sink the connection implements to send a whole response or a chunked stream.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stormo::serve {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
    std::string method;         // "GET", "POST", ...
    std::string path;           // the target without its query
    std::string authorization;  // the Authorization header, empty when absent
    std::string body;
    std::string origin;             // the Origin header (a browser's page elsewhere), empty when absent
    std::string requested_headers;  // a CORS preflight's Access-Control-Request-Headers
};

struct HttpResponse {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    HttpHeaders headers;  // extra ones (Retry-After, ...)
};

class ResponseSink {
public:
    virtual ~ResponseSink() = default;
    // Each returns false when the client can no longer be written to (gone, or too slow).
    virtual bool send(const HttpResponse& response) = 0;
    virtual bool begin_stream(int status, std::string_view content_type, const HttpHeaders& headers) = 0;
    virtual bool send_chunk(std::string_view data) = 0;
    virtual bool end_stream() = 0;
    // The connection's socket, for probing whether the client is still there.
    virtual int native_handle() const = 0;
};

}  // namespace stormo::serve

#pragma once
// A response sink that keeps what the routes send, for tests that call the routes without HTTP.
// It refuses streams: the tests using it check refusals and whole answers.
#include <string_view>
#include <vector>

#include "serve/http_types.hpp"

namespace stormo::serve::testing {

class RecordingSink final : public ResponseSink {
public:
    bool send(const HttpResponse& r) override {
        responses.push_back(r);
        return true;
    }
    bool begin_stream(int, std::string_view, const HttpHeaders&) override { return false; }
    bool send_chunk(std::string_view) override { return false; }
    bool end_stream() override { return false; }
    int native_handle() const override { return -1; }
    std::vector<HttpResponse> responses;
};

}  // namespace stormo::serve::testing

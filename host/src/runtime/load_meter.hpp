#pragma once
// How far a model's load is: the bytes of weights read so far against the bytes it will read (the
// dense part, and the routed experts when the store keeps every one in RAM), for a progress line.
// The bytes to read are an estimate until the expert store is planned, then exact.
#include <algorithm>
#include <cstdint>
#include <functional>

namespace stormo {

// Called with (bytes read, bytes to read); the last call has both equal.
using LoadProgress = std::function<void(uint64_t read, uint64_t to_read)>;

class LoadMeter {
public:
    LoadMeter(LoadProgress report, uint64_t to_read) : report_(std::move(report)), to_read_(to_read) {}

    void add(uint64_t bytes) {
        read_ += bytes;
        if (report_) report_(read_, std::max(read_, to_read_));
    }
    // The load reads `more` bytes after those read so far.
    void expect(uint64_t more) { to_read_ = read_ + more; }
    void finish() {
        if (report_) report_(read_, read_);
    }
    uint64_t read() const { return read_; }

private:
    LoadProgress report_;
    uint64_t to_read_ = 0;
    uint64_t read_ = 0;
};

}  // namespace stormo

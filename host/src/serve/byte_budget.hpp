#pragma once
// The bytes of request text the server parses and tokenizes at once, shared by every connection:
// a request takes its body's size for as long as it works on it and gives it back when done, so
// the memory those steps take (a bounded multiple of the text) is bounded in total, however many
// clients send large bodies together. A request that does not fit what is left is refused at once
// (HTTP 429), as the queue refuses; it is never left waiting.
#include <cstdint>
#include <mutex>
#include <optional>

namespace stormo::serve {

class ByteBudget {
public:
    explicit ByteBudget(uint64_t capacity) : capacity_(capacity) {}
    ByteBudget(const ByteBudget&) = delete;
    ByteBudget& operator=(const ByteBudget&) = delete;

    // Bytes taken from the budget until it is destroyed or released.
    class Lease {
    public:
        Lease(Lease&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) { other.budget_ = nullptr; }
        Lease& operator=(Lease&& other) noexcept;
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        ~Lease() { release(); }
        void release();

    private:
        friend class ByteBudget;
        Lease(ByteBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
        ByteBudget* budget_;
        uint64_t bytes_;
    };

    // Nothing when fewer than `bytes` are left now.
    std::optional<Lease> try_take(uint64_t bytes);
    uint64_t capacity() const { return capacity_; }
    uint64_t in_use() const;

private:
    void give_back(uint64_t bytes);

    const uint64_t capacity_;
    mutable std::mutex mutex_;
    uint64_t used_ = 0;
};

}  // namespace stormo::serve

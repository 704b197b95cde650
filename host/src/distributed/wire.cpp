#include "distributed/wire.hpp"

#include <cstring>
#include <type_traits>

namespace stormo::wire {
namespace {

class Writer {
public:
    explicit Writer(Tag kind) { put(static_cast<uint32_t>(kind)); }
    template <class T>
        requires std::is_arithmetic_v<T>
    void put(T v) {
        append(&v, sizeof v);
    }
    template <class T>
    void put_all(std::span<const T> values) {
        put(static_cast<uint64_t>(values.size()));
        append(values.data(), values.size_bytes());
    }
    void put(const std::string& s) { put_all(std::span<const char>(s.data(), s.size())); }
    std::vector<std::byte> take() { return std::move(bytes_); }

private:
    void append(const void* from, size_t n) {
        const size_t at = bytes_.size();
        bytes_.resize(at + n);
        if (n > 0) std::memcpy(bytes_.data() + at, from, n);
    }

    std::vector<std::byte> bytes_;
};

class Reader {
public:
    Reader(std::span<const std::byte> bytes, Tag kind, const char* what) : bytes_(bytes), what_(what) {
        uint32_t k = 0;
        if (!get(k) || k != static_cast<uint32_t>(kind)) failed_ = true;
    }
    // A message in a fixed slot: the zeros after it are the slot's.
    void skip_padding() {
        while (!failed_ && at_ < bytes_.size() && bytes_[at_] == std::byte{0}) ++at_;
    }
    template <class T>
        requires std::is_arithmetic_v<T>
    bool get(T& v) {
        if (failed_ || bytes_.size() - at_ < sizeof v) return !(failed_ = true);
        std::memcpy(&v, bytes_.data() + at_, sizeof v);
        at_ += sizeof v;
        return true;
    }
    template <class T>
    bool get_all(std::vector<T>& values) {
        uint64_t n = 0;
        if (!get(n) || n > (bytes_.size() - at_) / sizeof(T)) return !(failed_ = true);
        values.resize(static_cast<size_t>(n));
        std::memcpy(values.data(), bytes_.data() + at_, static_cast<size_t>(n) * sizeof(T));
        at_ += static_cast<size_t>(n) * sizeof(T);
        return true;
    }
    bool get(std::string& s) {
        std::vector<char> chars;
        if (!get_all(chars)) return false;
        s.assign(chars.begin(), chars.end());
        return true;
    }
    // Every field read and nothing left over.
    Expected<void> finish() const {
        if (failed_ || at_ != bytes_.size())
            return fail(ErrorKind::invalid_argument, std::string("a malformed ") + what_ + " message (" +
                                                         std::to_string(bytes_.size()) + " bytes)");
        return {};
    }

private:
    std::span<const std::byte> bytes_;
    size_t at_ = 0;
    bool failed_ = false;
    const char* what_;
};

}  // namespace

std::vector<std::byte> encode(const IdentityMessage& m) {
    Writer w(Tag::identity);
    for (const std::string* s : {&m.host, &m.identity.model, &m.identity.config, &m.identity.engine, &m.identity.kernels}) w.put(*s);
    w.put(static_cast<uint32_t>(m.streams ? 1 : 0));
    return w.take();
}

std::vector<std::byte> encode(const VerdictMessage& m) {
    Writer w(Tag::verdict);
    w.put(static_cast<uint32_t>(m.accepted ? 1 : 0));
    w.put(m.reason);
    return w.take();
}

std::vector<std::byte> encode(const WorkMessage& m) {
    Writer w(Tag::work);
    w.put(m.layer);
    w.put(m.width);
    w.put_all(std::span<const int32_t>(m.experts));
    for (const auto& rows : m.rows) w.put_all(std::span<const uint32_t>(rows));
    w.put_all(std::span<const float>(m.hidden));
    return w.take();
}

std::vector<std::byte> encode(const ResultMessage& m) {
    Writer w(Tag::result);
    w.put(m.layer);
    w.put(m.error);
    w.put_all(std::span<const float>(m.outputs));
    return w.take();
}

std::vector<std::byte> encode(const PrefetchMessage& m) {
    Writer w(Tag::prefetch);
    w.put(m.layer);
    w.put_all(std::span<const int32_t>(m.experts));
    return w.take();
}

std::vector<std::byte> encode(const MeasureMessage& m) {
    // The fields but the host take 4 + 8 + 4 + 8 + 8 bytes; the host gets the rest of the slot.
    constexpr size_t kHostRoom = kMeasureBytes - 64;
    Writer w(Tag::measure);
    w.put(m.host.substr(0, kHostRoom));
    w.put(m.expert_memory);
    w.put(static_cast<uint32_t>(m.holds_all ? 1 : 0));
    w.put(m.disk_bytes_per_s);
    std::vector<std::byte> bytes = w.take();
    bytes.resize(kMeasureBytes);
    return bytes;
}

Expected<IdentityMessage> decode_identity(std::span<const std::byte> bytes) {
    Reader r(bytes, Tag::identity, "identity");
    IdentityMessage m;
    for (std::string* s : {&m.host, &m.identity.model, &m.identity.config, &m.identity.engine, &m.identity.kernels}) r.get(*s);
    uint32_t streams = 0;
    r.get(streams);
    STORMO_TRY(r.finish());
    m.streams = streams == 1;
    return m;
}

Expected<VerdictMessage> decode_verdict(std::span<const std::byte> bytes) {
    Reader r(bytes, Tag::verdict, "verdict");
    VerdictMessage m;
    uint32_t accepted = 0;
    r.get(accepted);
    r.get(m.reason);
    STORMO_TRY(r.finish());
    m.accepted = accepted == 1;
    return m;
}

Expected<WorkMessage> decode_work(std::span<const std::byte> bytes) {
    Reader r(bytes, Tag::work, "expert work");
    WorkMessage m;
    r.get(m.layer);
    r.get(m.width);
    r.get_all(m.experts);
    m.rows.resize(m.experts.size());
    for (auto& rows : m.rows) r.get_all(rows);
    r.get_all(m.hidden);
    STORMO_TRY(r.finish());
    const size_t n_rows = m.width == 0 ? 0 : m.hidden.size() / m.width;
    if (m.width == 0 || m.hidden.size() % m.width != 0)
        return fail(ErrorKind::invalid_argument, "expert work for layer " + std::to_string(m.layer) + ": " +
                                                     std::to_string(m.hidden.size()) + " floats are not rows of " +
                                                     std::to_string(m.width));
    for (const auto& rows : m.rows)
        for (uint32_t i : rows)
            if (i >= n_rows)
                return fail(ErrorKind::invalid_argument, "expert work for layer " + std::to_string(m.layer) + ": row " +
                                                             std::to_string(i) + " of " + std::to_string(n_rows));
    return m;
}

Expected<ResultMessage> decode_result(std::span<const std::byte> bytes) {
    Reader r(bytes, Tag::result, "expert result");
    ResultMessage m;
    r.get(m.layer);
    r.get(m.error);
    r.get_all(m.outputs);
    STORMO_TRY(r.finish());
    return m;
}

Expected<PrefetchMessage> decode_prefetch(std::span<const std::byte> bytes) {
    Reader r(bytes, Tag::prefetch, "prefetch hint");
    PrefetchMessage m;
    r.get(m.layer);
    r.get_all(m.experts);
    STORMO_TRY(r.finish());
    for (int32_t e : m.experts)
        if (e < 0)
            return fail(ErrorKind::invalid_argument, "prefetch hint for layer " + std::to_string(m.layer) + ": expert " + std::to_string(e));
    return m;
}

Expected<MeasureMessage> decode_measure(std::span<const std::byte> bytes) {
    if (bytes.size() != kMeasureBytes)
        return fail(ErrorKind::invalid_argument, "a malformed measurement message (" + std::to_string(bytes.size()) +
                                                     " bytes, not " + std::to_string(kMeasureBytes) + ")");
    Reader r(bytes, Tag::measure, "measurement");
    MeasureMessage m;
    uint32_t holds_all = 0;
    r.get(m.host);
    r.get(m.expert_memory);
    r.get(holds_all);
    r.get(m.disk_bytes_per_s);
    r.skip_padding();
    STORMO_TRY(r.finish());
    m.holds_all = holds_all == 1;
    if (!(m.disk_bytes_per_s >= 0.0))
        return fail(ErrorKind::invalid_argument, "a measurement message with a disk bandwidth of " + std::to_string(m.disk_bytes_per_s));
    return m;
}

}  // namespace stormo::wire

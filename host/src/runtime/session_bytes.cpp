#include "runtime/session_bytes.hpp"

#include "util/content_hash.hpp"

namespace stormo {

void put_u32(char* out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

void put_u64(char* out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(v >> (8 * i));
}

uint32_t get_u32(const char* in) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    return v;
}

uint64_t get_u64(const char* in) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    return v;
}

void ByteWriter::u64(uint64_t v) {
    char b[8];
    put_u64(b, v);
    bytes_.append(b, sizeof b);
}

void ByteWriter::text(std::string_view s) {
    u64(s.size());
    bytes_ += s;
}

bool ByteReader::u64(uint64_t& v) {
    if (bytes_.size() - at_ < 8) return false;
    v = get_u64(bytes_.data() + at_);
    at_ += 8;
    return true;
}

bool ByteReader::text(std::string& s) {
    uint64_t n;
    if (!u64(n) || bytes_.size() - at_ < n) return false;
    s.assign(bytes_.substr(at_, n));
    at_ += n;
    return true;
}

bool ByteReader::raw(std::string_view& out, size_t size) {
    if (bytes_.size() - at_ < size) return false;
    out = bytes_.substr(at_, size);
    at_ += size;
    return true;
}

void write_expert_lists(ByteWriter& out, std::span<const std::vector<int32_t>> experts) {
    out.u64(experts.size());
    for (const auto& layer : experts) {
        out.u64(layer.size());
        for (int32_t e : layer) out.u64(static_cast<uint64_t>(static_cast<uint32_t>(e)));
    }
}

bool read_expert_lists(ByteReader& in, std::vector<std::vector<int32_t>>& experts) {
    uint64_t layers = 0;
    if (!in.u64(layers) || layers > (uint64_t{1} << 16)) return false;
    experts.assign(layers, {});
    for (auto& layer : experts) {
        uint64_t n = 0;
        if (!in.u64(n) || n > (uint64_t{1} << 20)) return false;
        layer.resize(n);
        for (int32_t& e : layer) {
            uint64_t v = 0;
            if (!in.u64(v)) return false;
            e = static_cast<int32_t>(static_cast<uint32_t>(v));
        }
    }
    return true;
}

void append_checked(ByteWriter& out, const void* data, size_t size) {
    out.raw(data, size);
    out.u64(checksum64(data, size));
}

bool read_checked(ByteReader& in, std::string_view& out, size_t size) {
    uint64_t sum = 0;
    return in.raw(out, size) && in.u64(sum) && sum == checksum64(out.data(), out.size());
}

std::string layout_difference(std::string_view saved, std::string_view running) {
    auto next = [](std::string_view& rest) {
        const size_t end = rest.find("; ");
        const std::string_view part = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
        return part;
    };
    while (!saved.empty() || !running.empty()) {
        const std::string_view a = next(saved), b = next(running);
        if (a != b)
            return "saved: " + std::string(a.empty() ? "nothing" : a) + "; this run: " + std::string(b.empty() ? "nothing" : b);
    }
    return "the same parts in another order";
}

HeldRows ring_rows_held(const Session& session, size_t ring) {
    const Session::RingInfo& info = session.ring_infos()[ring];
    const size_t end = session.position();
    if (info.state) return {end, end};
    const size_t written = session.written_end();
    const size_t first = written > info.rows ? written - info.rows : 0;
    return {std::min(first, end), end};
}

}  // namespace stormo

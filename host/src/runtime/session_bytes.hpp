#pragma once
// What session files (runtime/session_file.hpp) and prompt-cache blocks (runtime/prompt_cache.hpp)
// both need to write a session's raw state and read it back: numbers in a fixed byte order,
// length-prefixed fields, sections followed by their XXH3-64 checksum, the part of two layouts
// that differs, and the positions a session's rings hold.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/session.hpp"
#include "stormo/error.hpp"

namespace stormo {

// Little-endian, whatever the machine: a file written on one reads the same on another.
void put_u32(char* out, uint32_t v);
void put_u64(char* out, uint64_t v);
uint32_t get_u32(const char* in);
uint64_t get_u64(const char* in);

// Fields in a fixed order: little-endian numbers and length-prefixed strings.
class ByteWriter {
public:
    void u64(uint64_t v);
    void text(std::string_view s);
    void raw(const void* data, size_t size) { bytes_.append(static_cast<const char*>(data), size); }
    const std::string& bytes() const { return bytes_; }
    std::string& bytes() { return bytes_; }

private:
    std::string bytes_;
};

// Reads what ByteWriter wrote; every read says whether the bytes held it.
class ByteReader {
public:
    explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
    bool u64(uint64_t& v);
    bool text(std::string& s);
    // A view of the next `size` bytes (valid as long as the bytes read).
    bool raw(std::string_view& out, size_t size);
    bool done() const { return at_ == bytes_.size(); }
    size_t offset() const { return at_; }

private:
    std::string_view bytes_;
    size_t at_ = 0;
};

// Per layer, the experts a sequence's last tokens routed to (Session::routed_experts): a count
// of layers, then each layer's count and ids. read_expert_lists is false when the bytes end first
// or a count is beyond any model's.
void write_expert_lists(ByteWriter& out, std::span<const std::vector<int32_t>> experts);
bool read_expert_lists(ByteReader& in, std::vector<std::vector<int32_t>>& experts);

// Appends a section and its checksum.
void append_checked(ByteWriter& out, const void* data, size_t size);
// Reads a section appended by append_checked; false when the bytes end first or the checksum fails.
bool read_checked(ByteReader& in, std::string_view& out, size_t size);

// The first part of two layouts (Session::layout(): parts joined by "; ") that differs, as
// "saved: ...; this run: ...".
std::string layout_difference(std::string_view saved, std::string_view running);

// The positions [first, end) whose rows ring i of `session` holds (a ring of R rows holds
// [written_end - R, position)); a state's one row counts as its position's.
struct HeldRows {
    size_t first = 0;
    size_t end = 0;
};
HeldRows ring_rows_held(const Session& session, size_t ring);

}  // namespace stormo

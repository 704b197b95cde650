// read_ranges: see range_reader.hpp.
#include "store/range_reader.hpp"

#include <algorithm>
#include <cstring>


namespace stormo {

Expected<void> read_ranges(ReadBackend& backend, std::vector<RangeCopy> ranges, AlignedBuffer& window) {
    if (window.size() < kRangeWindowBytes)
        return fail(ErrorKind::internal, "read_ranges: a window of " + std::to_string(window.size()) + " bytes is too small");
    std::sort(ranges.begin(), ranges.end(),
              [](const RangeCopy& a, const RangeCopy& b) { return a.file != b.file ? a.file < b.file : a.offset < b.offset; });
    // Pages of these ranges cached by an earlier reader (another engine, a previous run) would
    // only hold memory the copies need in huge pages; the direct reads below do not use them.
    if (backend.direct_io())
        for (const RangeCopy& r : ranges) backend.drop_cached(r.file, r.offset, r.size);
    const uint64_t align = std::max<uint64_t>(backend.alignment(), 1);
    const std::string* window_file = nullptr;
    uint64_t window_begin = 0, window_end = 0;  // bytes [begin, end) of window_file are in `window`
    for (const RangeCopy& r : ranges) {
        uint64_t copied = 0;
        while (copied < r.size) {
            const uint64_t at = r.offset + copied;
            if (window_file == nullptr || *window_file != r.file || at < window_begin || at >= window_end) {
                const uint64_t begin = at / align * align;
                STORMO_TRY_ASSIGN(const size_t got, backend.read(r.file, begin, kRangeWindowBytes, window.data()));
                window_file = &r.file;
                window_begin = begin;
                window_end = begin + got;
                if (at >= window_end)
                    return fail(ErrorKind::io, r.file + ": ends at byte " + std::to_string(window_end) + ", inside " + r.what +
                                                   " (bytes " + std::to_string(r.offset) + " to " +
                                                   std::to_string(r.offset + r.size) + ")");
            }
            const uint64_t piece = std::min(r.size - copied, window_end - at);
            std::memcpy(static_cast<std::byte*>(r.dst) + copied, window.data() + (at - window_begin), piece);
            copied += piece;
        }
    }
    return {};
}

Expected<void> read_ranges(ReadBackend& backend, std::vector<RangeCopy> ranges) {
    AlignedBuffer window(kRangeWindowBytes, 4096);
    return read_ranges(backend, std::move(ranges), window);
}

}  // namespace stormo

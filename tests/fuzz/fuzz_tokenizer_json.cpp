// Fuzzes a tokenizer.json: the loader's checks of every component, then, for one it accepts, the
// tokenizer it built: a short text encoded (special tokens matched and not), decoded whole and
// token by token, streamed, and ids around the vocabulary's end decoded.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace {

// The input as a file the loader can open: a memfd, rewritten for each input (no disk writes).
const std::string& input_path(const uint8_t* data, size_t size) {
    static const int fd = memfd_create("tokenizer.json", 0);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) __builtin_trap();
    return path;
}

void exercise(const stormo::text::Tokenizer& tokenizer) {
    const char* text = "Hello, world! 123 <|endoftext|><|im_start|> h\xC3\xA9llo\n\n  x\xE2\x80\x99s \xF0\x9F\x98\x80\t.";
    for (bool match_special : {true, false}) {
        std::vector<int32_t> ids = tokenizer.encode(text, match_special);
        (void)tokenizer.decode(ids);
        (void)tokenizer.decode(ids, /*skip_special=*/true);
        stormo::text::StreamDecoder stream(tokenizer);
        for (int32_t id : ids) {
            (void)tokenizer.token_bytes(id);
            (void)stream.push(id);
        }
        (void)stream.finish();
    }
    const auto size = static_cast<int32_t>(tokenizer.size());
    std::vector<int32_t> edges = {0, size - 1, size, -1};
    (void)tokenizer.decode(edges);
    for (int32_t id : edges) {
        (void)tokenizer.token_bytes(id, /*skip_special=*/true);
        (void)tokenizer.is_special(id);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto tokenizer = stormo::text::Tokenizer::load(input_path(data, size));
    if (tokenizer) exercise(*tokenizer);
    return 0;
}

// The host's machinery names no model family: what one architecture needs (its GGUF mapping, its
// synth presets, its math) lives in its plugin, so a new family touches only plugins/<family>/.
// This reads every file of host/src and host/sdk as text and fails on a family's name in it,
// comments included: a comment that needs a family's name describes something that belongs there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The names of the shipped families as code spells them (plugin names, namespaces, GGUF
// architectures "qwen3moe" and "glm-dsa" included by the prefixes).
const std::vector<std::string> kFamilyNames = {"gpt_oss", "qwen3", "glm"};

// Tokenizer facts, not family facts: the names llama.cpp's converter writes as
// tokenizer.ggml.pre for the split regex it uses. The host's pre-tokenizer table maps them to the
// regex, whichever family the file holds.
const std::vector<std::string> kPreTokenizerNames = {"\"glm4\"", "\"chatglm-bpe\""};

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string without_pre_tokenizer_names(std::string text) {
    for (const std::string& name : kPreTokenizerNames)
        for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at)) text.erase(at, name.size());
    return text;
}

// "file:line: line" for every line of `root`'s files that names a family.
std::vector<std::string> family_mentions(const fs::path& root) {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (!entry.is_regular_file()) continue;
        std::istringstream lines(without_pre_tokenizer_names(read_text(entry.path())));
        std::string line;
        for (int n = 1; std::getline(lines, line); ++n)
            for (const std::string& name : kFamilyNames)
                if (line.find(name) != std::string::npos) {
                    found.push_back(fs::relative(entry.path(), STORMO_SOURCE_DIR).string() + ":" + std::to_string(n) + ": " + line);
                    break;
                }
    }
    return found;
}

TEST(HostKnowsNoFamily, HostSourcesNameNoFamily) {
    for (const char* folder : {"host/src", "host/sdk"}) {
        const fs::path root = fs::path(STORMO_SOURCE_DIR) / folder;
        ASSERT_TRUE(fs::is_directory(root)) << root;
        const std::vector<std::string> found = family_mentions(root);
        std::string listing;
        for (const std::string& f : found) listing += "\n  " + f;
        EXPECT_TRUE(found.empty()) << "family names in the host's machinery:" << listing;
    }
}

// The check itself sees a family's name where one is written.
TEST(HostKnowsNoFamily, TheCheckFindsANameWhereOneIsWritten) {
    const fs::path dir = fs::temp_directory_path() / ("stormo-family-names-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::create_directories(dir);
    std::ofstream(dir / "a.cpp") << "// fine\nif (arch == \"qwen3moe\") {}\n";
    std::ofstream(dir / "b.cpp") << "{\"glm4\", kLlama3Pattern},\n";
    const std::vector<std::string> found = family_mentions(dir);
    fs::remove_all(dir);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_NE(found[0].find("a.cpp:2:"), std::string::npos) << found[0];
}

}  // namespace

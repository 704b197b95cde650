// A model path opened once (model/model_bundle.hpp): recognised by its content, not its name;
// refused, naming the path, when it is not a model; and a split GGUF's parsed header serving the
// weights, the tokenizer and the chat template alike.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "checkpoint_rewrite.hpp"
#include "cli_runner.hpp"
#include "gguf_split_writer.hpp"
#include "gguf_writer.hpp"
#include "jinja/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/gguf_split.hpp"
#include "model/model_bundle.hpp"
#include "model/model_text_files.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A model path opened as the CLI opens it: GGUF models mapped by this build's family plugins.
Expected<ModelBundle> open_bundle(const std::string& path) {
    STORMO_TRY_ASSIGN(const PluginRegistry plugins, PluginRegistry::discover(PluginSearch{}));
    return ModelBundle::open(path, plugins.families());
}


// The demo's prompt ids from the tokenizer the model path hands over.
std::vector<int32_t> prompt_ids(const text::ModelText& model_text) {
    auto tokenizer = text::Tokenizer::from_model_text(model_text);
    EXPECT_TRUE(tokenizer) << tokenizer.error().message;
    return tokenizer ? tokenizer->encode("123+456=") : std::vector<int32_t>{};
}

std::vector<int32_t> demo_prompt_ids() {
    auto tokenizer = text::Tokenizer::load(demo_dir());
    EXPECT_TRUE(tokenizer) << tokenizer.error().message;
    return tokenizer ? tokenizer->encode("123+456=") : std::vector<int32_t>{};
}

TEST(ModelBundle, AGgufFileIsRecognisedByItsContentWhateverItsName) {
    test::TempDir dir;
    for (const char* name : {"sha256-abc", "MODEL.GGUF"}) {
        const std::string file = dir.file(name);
        fs::copy_file(demo_gguf(), file);
        auto bundle = open_bundle(file);
        ASSERT_TRUE(bundle) << name << ": " << bundle.error().message;
        EXPECT_NE(bundle->source()->gguf_metadata(), nullptr) << name;
        EXPECT_EQ(prompt_ids(bundle->text()), demo_prompt_ids()) << name;
        // `tokenize --tokenizer` and `chat-template --tokenizer` read it so too.
        auto text = read_model_text(file);
        ASSERT_TRUE(text) << text.error().message;
        EXPECT_NE(text->gguf, nullptr) << name;
        fs::remove(file);
    }
}

TEST(ModelBundle, RunTakesAGgufBlobWithoutTheSuffix) {
    test::TempDir dir;
    const std::string blob = dir.file("sha256-abc");
    fs::copy_file(demo_gguf(), blob);
    const test::CommandResult r = test::run_cli("run --model '" + blob + "' --prompt '123+456='");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "579\n");
}

TEST(ModelBundle, ADirectoryHoldingOneGgufOpensIt) {
    test::TempDir dir;
    fs::copy_file(demo_gguf(), dir.file("demo.gguf"));
    auto bundle = open_bundle(dir.path());
    ASSERT_TRUE(bundle) << bundle.error().message;
    EXPECT_EQ(prompt_ids(bundle->text()), demo_prompt_ids());

    fs::copy_file(demo_gguf(), dir.file("other.gguf"));
    auto two = open_bundle(dir.path());
    ASSERT_FALSE(two);
    EXPECT_THAT(two.error().message, HasSubstr(dir.path() + " holds 2 GGUF models (demo.gguf, other.gguf): pass the one to run"));
}

TEST(ModelBundle, AFileOfAModelDirectoryNamesTheDirectory) {
    for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
        auto bundle = open_bundle(demo_dir() + "/" + name);
        ASSERT_FALSE(bundle) << name;
        EXPECT_EQ(bundle.error().kind, ErrorKind::invalid_argument) << bundle.error().message;
        EXPECT_THAT(bundle.error().message, HasSubstr(demo_dir() + "/" + name + " is a file of a model directory"));
        EXPECT_THAT(bundle.error().message, HasSubstr("pass the directory that holds it: " + demo_dir()));
    }
}

TEST(ModelBundle, ADirectoryWithoutConfigOrGgufIsNotAModel) {
    test::TempDir dir;
    test::write_bytes(dir.file("notes.txt"), "not a model");
    auto bundle = open_bundle(dir.path());
    ASSERT_FALSE(bundle);
    EXPECT_EQ(bundle.error().kind, ErrorKind::missing);
    EXPECT_THAT(bundle.error().message, HasSubstr("not a model directory: no config.json or .gguf in " + dir.path()));
}

TEST(ModelBundle, AFileThatIsNeitherSaysWhatItIsNot) {
    test::TempDir dir;
    for (const char* name : {"notes.txt", "fake.gguf"}) {
        const std::string file = dir.file(name);
        test::write_bytes(file, "GGML is not GGUF");
        auto bundle = open_bundle(file);
        ASSERT_FALSE(bundle) << name;
        EXPECT_THAT(bundle.error().message,
                    HasSubstr(file + " is not a model: not a directory, and not a GGUF file (it does not start with \"GGUF\")"));
    }
    const test::CommandResult r = test::run_cli("inspect --model '" + dir.file("notes.txt") + "'");
    EXPECT_NE(r.status, 0);
    // The path is said once: the reason names it, so --model does not again.
    EXPECT_THAT(r.err, HasSubstr("--model: " + dir.file("notes.txt") + " is not a model"));
}

// ---- a split GGUF, parsed once ------------------------------------------------------------------

// Once the bundle is open, every part's magic is overwritten in place: a second parse of any part
// would refuse it, while the tensors' bytes stay where they were (the expert store reads them by
// path, O_DIRECT, as it always does). The tokenizer, the chat template and the engine must all
// come from what was parsed when the bundle opened.
TEST(ModelBundle, ASplitGgufIsParsedOnceForWeightsTokenizerAndTemplate) {
    test::TempDir dir;
    const std::vector<std::string> parts = write_demo_split(dir);
    auto bundle = open_bundle(parts[1]);  // any part names the model
    ASSERT_TRUE(bundle) << bundle.error().message;
    for (const std::string& part : parts) {
        std::fstream f(part, std::ios::in | std::ios::out | std::ios::binary);
        f.write("XXXX", 4);
        ASSERT_TRUE(f.good()) << part;
    }
    auto reparsed = GgufModel::open(parts[1]);
    ASSERT_FALSE(reparsed);
    EXPECT_THAT(reparsed.error().message, HasSubstr("not a GGUF file"));

    const text::ModelText model_text = bundle->text();
    const std::vector<int32_t> ids = prompt_ids(model_text);
    EXPECT_EQ(ids, demo_prompt_ids());
    auto from_split = text::ChatTemplate::from_model_text(model_text);
    ASSERT_TRUE(from_split) << from_split.error().message;
    auto from_file = text::ChatTemplate::load(demo_gguf());
    ASSERT_TRUE(from_file) << from_file.error().message;
    auto messages = text::parse_json_value(R"([{"role": "user", "content": "123+456="}])", "messages");
    auto options = text::parse_json_value(R"({"add_generation_prompt": true, "strftime_now": "2026-01-01"})", "options");
    ASSERT_TRUE(messages && options);
    auto rendered = from_split->render(*messages, *options);
    ASSERT_TRUE(rendered) << rendered.error().message;
    EXPECT_EQ(*rendered, *from_file->render(*messages, *options));

    EngineOptions o;
    o.setup.model_dir = parts[1];
    o.setup.opened = bundle->source();
    o.setup.kernels.value = "reference";
    o.threads = 2;
    auto engine = Engine::open(o);
    ASSERT_TRUE(engine) << engine.error().message;
    auto session = (*engine)->new_session(ids.size());
    ASSERT_TRUE(session) << session.error().message;
    ForwardOptions all;
    all.all_logits = true;
    auto logits = (*engine)->pipeline().forward(**session, ids, all);
    ASSERT_TRUE(logits) << logits.error().message;
    EXPECT_TRUE(same_bits(*logits, all_logits(demo_gguf(), ids)));
}

}  // namespace
}  // namespace stormo::testing

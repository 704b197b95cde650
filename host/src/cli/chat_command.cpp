#include "cli/chat_command.hpp"

#include "runtime/sequence_generation.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "runtime/sequence_generation.hpp"
#include "stormo/quote.hpp"
#include "util/file.hpp"

namespace stormo::cli {
namespace {

// The one piece of process-wide state: a signal handler can reach nothing else. SigintFlag owns it.
std::atomic<bool> g_sigint{false};

void on_sigint(int) { g_sigint.store(true); }

constexpr uint64_t kToolsFileCap = uint64_t{16} << 20;

Expected<text::Value> template_options(const ChatOptions& options) {
    text::Value vars = text::Value::object();
    if (options.reasoning_effort) vars.set("reasoning_effort", text::Value(*options.reasoning_effort));
    if (options.thinking) vars.set("enable_thinking", text::Value(*options.thinking == "on"));
    if (options.tools_file) {
        auto read = read_file(*options.tools_file, kToolsFileCap);
        if (!read) return tl::unexpected(with_context(read.error(), "--tools"));
        const std::string& text = *read;
        STORMO_TRY_ASSIGN(text::Value tools, text::parse_json_value(text, "--tools " + *options.tools_file));
        if (!tools.is_list()) return fail(ErrorKind::invalid_argument, "--tools " + *options.tools_file + ": must hold a JSON list of tools");
        vars.set("tools", std::move(tools));
    }
    return vars;
}

// A prompt longer than one block shows how far its prefill is, on one line that clears when done.
void print_prefill_progress(size_t done, size_t total) {
    if (total <= Session::kDefaultMaxBlock) return;
    if (done < total)
        std::cerr << "\rstormo: prompt " << done << " / " << total << " positions" << std::flush;
    else
        std::cerr << "\r\033[K" << std::flush;
}

double per_second(size_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; }

}  // namespace

void add_chat_options(po::options_description& d, ChatOptions& out) {
    d.add_options()
        ("system", po::value<std::string>()->value_name("TEXT")->notifier([&out](const std::string& v) { out.system = v; }),
         "a system message before the conversation")
        ("max-tokens,n", po::value<int64_t>(&out.max_tokens)->value_name("N"), "tokens per answer at most (default 1024)")
        ("show-reasoning", po::bool_switch(&out.show_reasoning), "print the model's reasoning before its answer")
        ("reasoning-effort", po::value<std::string>()->value_name("LEVEL")->notifier([&out](const std::string& v) { out.reasoning_effort = v; }),
         "low, medium or high, for templates that take it (gpt-oss)")
        ("thinking", po::value<std::string>()->value_name("on|off")->notifier([&out](const std::string& v) { out.thinking = v; }),
         "enable_thinking for templates that take it (Qwen3)")
        ("tools", po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.tools_file = v; }),
         "a JSON list of tool definitions the template presents to the model")
        ("session", po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.session_file = v; }),
         "the conversation on disk: loaded at start when FILE exists, saved after each answer");
    add_sampling_options(d, out.sampling);
}

Expected<void> check_chat_options(const ChatOptions& options) {
    if (options.max_tokens <= 0) return fail(ErrorKind::invalid_argument, "--max-tokens must be >= 1");
    if (options.reasoning_effort && *options.reasoning_effort != "low" && *options.reasoning_effort != "medium" &&
        *options.reasoning_effort != "high")
        return fail(ErrorKind::invalid_argument, "--reasoning-effort must be low, medium or high, not " + quoted_printable(*options.reasoning_effort));
    if (options.thinking && *options.thinking != "on" && *options.thinking != "off")
        return fail(ErrorKind::invalid_argument, "--thinking must be on or off, not " + quoted_printable(*options.thinking));
    if (options.session_file) STORMO_TRY(check_output_path(*options.session_file, "--session"));
    return validate(options.sampling);
}

Expected<std::unique_ptr<ChatStack>> open_chat(const CommonOptions& common, const ChatOptions& options, const ChatUse& use) {
    if (!common.model) return fail(ErrorKind::invalid_argument, kModelRequired);
    auto stack = std::make_unique<ChatStack>();
    // The model is opened once: the tokenizer, the template and the engine all come from it.
    STORMO_TRY_ASSIGN(const ModelBundle bundle, open_model_bundle(common));
    {
        const text::ModelText model_text = bundle.text();
        STORMO_TRY_ASSIGN(auto tokenizer, text::Tokenizer::from_model_text(model_text));
        stack->tokenizer = std::make_unique<text::Tokenizer>(std::move(tokenizer));
        STORMO_TRY_ASSIGN(auto chat_template, text::ChatTemplate::from_model_text(model_text));
        stack->chat_template = std::make_unique<text::ChatTemplate>(std::move(chat_template));
    }
    ChatSettings settings;
    STORMO_TRY_ASSIGN(settings.template_options, template_options(options));
    settings.max_tokens = static_cast<size_t>(options.max_tokens);
    settings.sampling = options.sampling;
    settings.context_advice = use.prompt && !options.session_file ? "--context raises it" : use.context_advice;
    ContextRule context{0, true};
    if (use.prompt && !options.session_file) {
        const text::Value first = text::Value::list(
            {text::Value::object({{"role", text::Value("user")}, {"content", text::Value(*use.prompt)}})});
        STORMO_TRY_ASSIGN(const std::vector<int32_t> ids,
                          Conversation::render_ids(*stack->tokenizer, *stack->chat_template, settings,
                                                   options.system.value_or(""), first));
        context = ContextRule{ids.size() + settings.max_tokens, false};
    }

    const bool progress = isatty(STDERR_FILENO);
    // An answer's worth of rewind slack: every turn re-renders the last answer (Harmony rewrites
    // its end and drops its analysis), so the session rewinds about that far each time.
    auto loaded = open_engine(common, bundle, static_cast<size_t>(options.max_tokens) + 64, context);
    if (!loaded) return tl::unexpected(loaded.error());
    stack->loaded = std::move(*loaded);
    Engine& engine = *stack->loaded.engine;
    STORMO_TRY(stack->tokenizer->check_fits(engine.model().vocab_size()));
    STORMO_TRY_ASSIGN(stack->session, engine.new_session(stack->loaded.context));

    STORMO_TRY_ASSIGN(settings.stop_ids, stop_ids_of(engine.source(), engine.model().vocab_size()));
    STORMO_TRY(stack->tokenizer->check_stop_ids(settings.stop_ids));
    if (progress) settings.on_prefill_block = print_prefill_progress;
    settings.speculation = engine.speculation();
    settings.speculation_memory = std::make_shared<SpeculationMemory>(moe_shape_of(engine.model()));
    stack->conversation = std::make_unique<Conversation>(engine.pipeline(), *stack->session, *stack->tokenizer,
                                                         *stack->chat_template, std::move(settings));
    if (options.system) stack->conversation->set_system(*options.system);
    return stack;
}

ReplyPrinter::ReplyPrinter(bool show_reasoning) : show_reasoning_(show_reasoning), colour_(isatty(STDOUT_FILENO)) {}

void ReplyPrinter::print(const text::ReplyPiece& piece) {
    const bool reasoning = piece.kind == text::ReplyPiece::Kind::reasoning;
    if (reasoning && !show_reasoning_) return;
    if (reasoning != in_reasoning_) {
        if (in_reasoning_) std::cout << (colour_ ? "\033[0m" : "") << (line_open_ ? "\n\n" : "\n");
        if (reasoning && colour_) std::cout << "\033[2m";
        in_reasoning_ = reasoning;
        line_open_ = false;
    }
    std::cout << piece.text << std::flush;
    if (!piece.text.empty()) line_open_ = piece.text.back() != '\n';
}

void ReplyPrinter::finish() {
    if (in_reasoning_ && colour_) std::cout << "\033[0m";
    if (line_open_) std::cout << "\n";
    std::cout << std::flush;
    in_reasoning_ = false;
    line_open_ = false;
}

std::string turn_speed(const TurnResult& turn, const std::string& context_advice) {
    const GenerationResult& g = turn.generation;
    const size_t computed = turn.prompt_tokens - g.reused_positions;
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(1);
    s << "prompt " << turn.prompt_tokens << " tokens";
    if (g.reused_positions > 0) s << " (" << g.reused_positions << " reused)";
    s << " " << per_second(computed, g.prefill_seconds) << " tok/s, answer " << g.tokens.size() << " tokens "
      << per_second(g.tokens.size() > 1 ? g.tokens.size() - 1 : 0, g.decode_seconds) << " tok/s";
    if (g.reason == StopReason::cancelled) s << " (stopped)";
    if (turn.context_full) s << "; " << context_full_note(turn.context, context_advice);
    else if (g.reason == StopReason::max_tokens) s << " (--max-tokens reached)";
    return s.str();
}

SigintFlag::SigintFlag() {
    g_sigint.store(false);
    struct sigaction action {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a read waiting for input returns, so Ctrl-C is seen at the prompt
    sigaction(SIGINT, &action, nullptr);
}

SigintFlag::~SigintFlag() { signal(SIGINT, SIG_DFL); }

const std::atomic<bool>& SigintFlag::flag() const { return g_sigint; }

void SigintFlag::clear() { g_sigint.store(false); }

}  // namespace stormo::cli

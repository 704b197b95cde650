// stormo run: one question in text, the answer streamed to stdout as it is generated.
#include <csignal>
#include <iostream>

#include "cli/chat_command.hpp"
#include "cli/chat_session.hpp"
#include "cli/commands.hpp"
#include "cli/structured_output_options.hpp"

namespace stormo::cli {

int run_run(int argc, char** argv) {
    CommonOptions common;
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    ChatOptions chat;
    std::optional<std::string> prompt;
    po::options_description d("run options");
    d.add_options()("prompt,p", po::value<std::string>()->value_name("TEXT")->notifier([&prompt](const std::string& v) { prompt = v; }),
                    "the user's message");
    add_chat_options(d, chat);
    StructuredOutputOptions structured;
    add_structured_output_options(d, structured);
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "run", "MODEL PROMPT [options]",
                                     "Renders the prompt with the model's chat template, answers it and prints the answer\n"
                                     "as it is generated; the speed goes to stderr. With --session FILE the prompt continues\n"
                                     "the conversation FILE holds (its KV included) and FILE is saved after the answer.",
                                     d, {"model", "prompt"});
    if (!parsed) return report_usage_error("run", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (!common.model) return report_usage_error("run", Error{ErrorKind::invalid_argument, kModelRequired});
    if (!prompt) return report_usage_error("run", Error{ErrorKind::invalid_argument, "a prompt is required: give it after the model or with --prompt (-p)"});
    if (auto ok = check_chat_options(chat); !ok) return report_usage_error("run", ok.error());
    if (const auto served = serve_experts_as_rank("run", common)) return *served;  // a rank > 0: rank 0 answers

    auto grammar = read_structured_output(structured);
    if (!grammar) return report_usage_error("run", grammar.error());
    auto stack = open_chat(common, chat, ChatUse{prompt});
    if (!stack) return report_error("run", stack.error());
    if (auto ok = constrain_answers(**stack, *grammar); !ok) return report_error("run", ok.error());
    if (auto resumed = resume_chat_session(**stack, chat); !resumed) return report_error("run", resumed.error());
    SigintFlag interrupted;
    ReplyPrinter printer(chat.show_reasoning);
    auto turn = (*stack)->conversation->ask(*prompt, [&](const text::ReplyPiece& p) { printer.print(p); }, &interrupted.flag());
    printer.finish();
    if (!turn) return report_error("run", turn.error());
    for (const auto& call : turn->reply.tool_calls)
        std::cout << "[tool call] " << call.name << " " << text::to_json(call.arguments) << "\n";
    std::cerr << "stormo: " << turn_speed(*turn, (*stack)->conversation->settings().context_advice) << std::endl;
    // An interrupted answer is not saved: FILE keeps the last answered turn.
    if (chat.session_file && turn->generation.reason != StopReason::cancelled) {
        auto saved = save_chat_session(**stack, *chat.session_file);
        if (!saved) return report_error("run", with_context(saved.error(), "--session"));
        std::cerr << "stormo: saved " << *chat.session_file << ": " << describe(*saved) << std::endl;
    }
    // Interrupted: the answer printed is partial, which a script must be able to tell.
    return turn->generation.reason == StopReason::cancelled ? 128 + SIGINT : 0;
}

}  // namespace stormo::cli

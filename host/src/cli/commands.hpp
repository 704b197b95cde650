#pragma once
// One entry function per subcommand: argv[0] is the subcommand's name, the rest its options.
// Each returns the process exit status (0 success, 1 failure, 2 a wrong command line) and
// prints a failure as one line on stderr starting with "stormo: ".
namespace stormo::cli {

int run_plugins(int argc, char** argv);
int run_inspect(int argc, char** argv);
int run_generate(int argc, char** argv);
int run_logits(int argc, char** argv);
int run_synth(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_bench_kernels(int argc, char** argv);
int run_bench_session(int argc, char** argv);
int run_cache_sim(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_detokenize(int argc, char** argv);
int run_run(int argc, char** argv);
int run_chat(int argc, char** argv);
int run_chat_template(int argc, char** argv);
int run_pipe(int argc, char** argv);
int run_serve(int argc, char** argv);

}  // namespace stormo::cli

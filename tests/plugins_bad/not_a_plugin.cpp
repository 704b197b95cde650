// A shared library named like a model plugin (libstormo-model-bogus.so) that exports none of
// the stormo entry points: the loader must refuse it with "missing symbol stormo_plugin_abi".
extern "C" __attribute__((visibility("default"))) int bogus_library_answer() { return 42; }

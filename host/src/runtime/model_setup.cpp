#include "runtime/model_setup.hpp"

namespace stormo {

Expected<void> open_model_setup(const SetupRequest& request, ModelSetup& out) {
    auto registry = PluginRegistry::discover(request.search);
    if (!registry) return tl::unexpected(registry.error());
    out.registry = std::move(*registry);

    if (request.opened) {
        out.source = request.opened;
    } else {
        auto source = open_model_source(request.model_dir, out.registry.families());
        if (!source) return tl::unexpected(with_model_context(source.error(), request.model_origin, request.model_dir));
        out.source = std::move(*source);
    }

    auto family = select_family(out.registry, out.source->config(), request.family);
    if (!family) return tl::unexpected(family.error());
    out.family = *family;

    out.cpu = detect_cpu_features();
    auto kernels = select_kernels(out.registry, out.cpu, request.kernels);
    if (!kernels) return tl::unexpected(kernels.error());
    out.kernels = *kernels;
    return {};
}

}  // namespace stormo

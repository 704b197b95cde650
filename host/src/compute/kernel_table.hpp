#pragma once
// The kernel table the forward pass runs on: the reference with the chosen kernels plugin's
// entries installed over it, and which of the two provides each operation (for `stormo inspect`).
#include <string>
#include <vector>

#include "plugin_loading/selection.hpp"
#include "stormo/export.hpp"
#include "stormo/kernels.hpp"

namespace stormo {

// Its function pointers point into the plugin: keep the registry (or the selected plugin) alive
// while the table is used.
STORMO_API KernelTable build_kernel_table(const KernelsSelection& selection);

// Whether the integer road runs the pair kernels of `t` for format f (BF16 activations): the
// entry is a plugin's (the reference's is only the definition; stormo::matmul never runs it).
inline bool runs_bf16_pairs(const KernelTable& t, WeightFormat f) {
    const size_t i = static_cast<size_t>(f);
    return i < kWeightFormatCount && t.matmul_bf16a[i] != nullptr && t.matmul_bf16a[i] != reference_kernels().matmul_bf16a[i];
}

// One row of "which kernel does what".
struct KernelEntry {
    std::string operation;  // "matmul BF16 out_in", "rmsnorm", ...
    std::string provider;   // "reference", the plugin's name, or "none"
};
// An entry that differs from the reference's is the plugin's. The integer road's entries say
// "(int8 road off)" unless the engine runs it.
STORMO_API std::vector<KernelEntry> kernel_providers(const KernelTable& table, const KernelsSelection& selection,
                                                     bool int8_activations);

}  // namespace stormo

// Assembling the kernel table from the selection, and naming each entry's provider.
#include "compute/kernel_table.hpp"

namespace stormo {
namespace {

const char* layout_name(Layout l) { return l == Layout::out_in ? "out_in" : "in_out"; }
std::string format_name(size_t f) { return weight_format_name(static_cast<WeightFormat>(f)); }

template <class Fn>
std::string provider_of(Fn mine, Fn reference, const KernelsSelection& selection) {
    if (mine == nullptr) return "none";
    return mine == reference ? std::string(kReferenceKernels) : selection.name;
}

}  // namespace

KernelTable build_kernel_table(const KernelsSelection& selection) {
    KernelTable table = reference_kernels();
    if (selection.plugin != nullptr && selection.plugin->kernels) selection.plugin->kernels->install(table);
    return table;
}

std::vector<KernelEntry> kernel_providers(const KernelTable& table, const KernelsSelection& selection,
                                          bool int8_activations) {
    const KernelTable& ref = reference_kernels();
    std::vector<KernelEntry> out;
    for (size_t f = 0; f < kWeightFormatCount; ++f)
        for (size_t l = 0; l < kLayoutCount; ++l)
            out.push_back({"matmul " + format_name(f) + " " + layout_name(static_cast<Layout>(l)),
                           provider_of(table.matmul[f][l], ref.matmul[f][l], selection)});
    for (size_t f = 0; f < kWeightFormatCount; ++f)
        out.push_back({"row_to_f32 " + format_name(f), provider_of(table.row_to_f32[f], ref.row_to_f32[f], selection)});
    out.push_back({"rmsnorm", provider_of(table.rmsnorm, ref.rmsnorm, selection)});
    out.push_back({"softmax", provider_of(table.softmax, ref.softmax, selection)});
    out.push_back({"dot", provider_of(table.dot, ref.dot, selection)});
    out.push_back({"axpy", provider_of(table.axpy, ref.axpy, selection)});
    out.push_back({"dot_many (attention scores)", provider_of(table.dot_many, ref.dot_many, selection)});
    out.push_back({"axpy_many (attention values)", provider_of(table.axpy_many, ref.axpy_many, selection)});
    out.push_back({"silu", provider_of(table.silu, ref.silu, selection)});
    out.push_back({"dot_u8i8", provider_of(table.dot_u8i8, ref.dot_u8i8, selection)});
    out.push_back({"dot_rows_i8 (bounded head)", provider_of(table.dot_rows_i8, ref.dot_rows_i8, selection)});
    out.push_back({"xor_reduce (RAM probe)", provider_of(table.xor_reduce, ref.xor_reduce, selection)});
    out.push_back({std::string("quantize_q8") + (int8_activations ? "" : " (int8 road off)"),
                   provider_of(table.quantize_q8, ref.quantize_q8, selection)});
    for (size_t f = 0; f < kWeightFormatCount; ++f) {
        if (table.matmul_q8[f] == nullptr) continue;
        out.push_back({"matmul_q8 " + format_name(f) + " out_in" + (int8_activations ? "" : " (int8 road off)"),
                       provider_of(table.matmul_q8[f], ref.matmul_q8[f], selection)});
    }
    for (size_t f = 0; f < kWeightFormatCount; ++f) {
        if (table.matmul_bf16a[f] == nullptr) continue;
        const bool runs = runs_bf16_pairs(table, static_cast<WeightFormat>(f));
        out.push_back({"matmul_bf16a " + format_name(f) + " out_in" +
                           (!runs ? " (the float road runs)" : int8_activations ? "" : " (int8 road off)"),
                       provider_of(table.matmul_bf16a[f], ref.matmul_bf16a[f], selection)});
    }
    return out;
}

}  // namespace stormo

#pragma once
// One line writes a family plugin's four C entry points:
//
//   STORMO_FAMILY_PLUGIN(stormo::gpt_oss::GptOssFamily, "gpt_oss", "0.2.0",
//                        "GPT-OSS: GQA with sinks, ...", "GptOssForCausalLM,gpt_oss")
//
// The family class must be default-constructible and derive from stormo::FamilyPlugin. The score
// is the SDK's config.json match on `accepts` (architectures, then model_type); a factory that
// throws becomes an error the host reports, never an exception across the C boundary.
#include <exception>
#include <string>

#include "stormo/family_plugin.hpp"

#define STORMO_FAMILY_PLUGIN(FamilyClass, name, version, summary, accepts)                                      \
    namespace {                                                                                                \
    const ::stormo::PluginDescription stormo_family_description_{name, ::stormo::PluginKind::model, version,  \
                                                                 summary, accepts, ""};                        \
    }                                                                                                          \
    STORMO_DEFINE_PLUGIN_ABI()                                                                                 \
    STORMO_PLUGIN_EXPORT const ::stormo::PluginDescription* stormo_plugin_describe() {                         \
        return &stormo_family_description_;                                                                    \
    }                                                                                                          \
    STORMO_PLUGIN_EXPORT int stormo_plugin_score(const ::stormo::ScoreQuery* query) {                          \
        if (query == nullptr || query->config == nullptr) return 0;                                            \
        return ::stormo::score_model_config(*query->config, accepts);                                          \
    }                                                                                                          \
    STORMO_PLUGIN_EXPORT ::stormo::PluginObject* stormo_plugin_create(::stormo::Error* error) {                \
        try {                                                                                                  \
            return new FamilyClass();                                                                          \
        } catch (const std::exception& e) {                                                                    \
            if (error != nullptr)                                                                              \
                *error = ::stormo::Error{::stormo::ErrorKind::resource, std::string(name) + ": " + e.what()};  \
            return nullptr;                                                                                    \
        }                                                                                                      \
    }

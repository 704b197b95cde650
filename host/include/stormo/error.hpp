#pragma once
// Errors travel as values: every fallible SDK call returns stormo::Expected<T>.
#include <string>
#include <utility>

#include <tl/expected.hpp>

#include "stormo/export.hpp"

namespace stormo {

enum class ErrorKind {
    invalid_argument,  // a request or option the caller got wrong
    io,                // the operating system refused a read, open or write
    format,            // a file whose content breaks its format (safetensors, JSON, YAML)
    missing,           // a file, tensor or field that must exist and does not
    mismatch,          // a tensor or field with the wrong dtype, shape or type
    unsupported,       // a valid request this build cannot serve
    plugin,            // a shared library that is not a usable stormo plugin
    config,            // an engine configuration (YAML, flags) that is wrong
    resource,          // memory, context or budget exhausted
    internal,          // a broken invariant inside stormo
    // Another process this one computes with (a rank of an mpirun: docs/distributed.md) died,
    // hangs or cannot be reached: the run cannot go on, however the request was.
    peer_lost,
};

STORMO_API const char* to_string(ErrorKind kind);

struct STORMO_API Error {
    ErrorKind kind = ErrorKind::internal;
    std::string message;  // one line naming the file, tensor, field or option at fault
};

template <class T>
using Expected = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(ErrorKind kind, std::string message) {
    return tl::unexpected<Error>(Error{kind, std::move(message)});
}

// Passing errors up, one line per call:
//   STORMO_TRY(store.add_layer(layout));               // Expected<anything>: the value is dropped
//   STORMO_TRY_ASSIGN(auto config, parse(source));     // declares or assigns from the value
// Either returns the error unchanged from the enclosing function (which returns an Expected).
// STORMO_TRY_ASSIGN expands to several statements: brace it when it is the body of an if.
#define STORMO_CONCAT_(a, b) a##b
#define STORMO_CONCAT(a, b) STORMO_CONCAT_(a, b)
#define STORMO_TRY(expr)                                                                 \
    do {                                                                                 \
        if (auto stormo_try_result_ = (expr); !stormo_try_result_)                       \
            return ::tl::unexpected<::stormo::Error>(std::move(stormo_try_result_).error()); \
    } while (0)
#define STORMO_TRY_ASSIGN_(tmp, lhs, expr)                                     \
    auto tmp = (expr);                                                         \
    if (!tmp) return ::tl::unexpected<::stormo::Error>(std::move(tmp).error()); \
    lhs = std::move(*tmp)
#define STORMO_TRY_ASSIGN(lhs, expr) STORMO_TRY_ASSIGN_(STORMO_CONCAT(stormo_try_value_, __LINE__), lhs, expr)

// Prefixes context ("while loading X: ") to an error travelling upwards.
inline Error with_context(Error e, const std::string& context) {
    e.message = context + ": " + e.message;
    return e;
}

}  // namespace stormo

// The pool interface's out-of-line destructor: its vtable and type info live in the SDK library,
// once for the host and every plugin.
#include "stormo/kernels.hpp"

namespace stormo {

ThreadPool::~ThreadPool() = default;

}  // namespace stormo

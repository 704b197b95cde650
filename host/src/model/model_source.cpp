// ModelSource's out-of-line destructor: the key function that anchors its vtable and RTTI in the
// core library, so plugins and the CLI share one definition.
#include "model/model_source.hpp"

namespace stormo {

ModelSource::~ModelSource() = default;

}  // namespace stormo

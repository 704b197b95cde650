#pragma once
// An object made by a plugin's code, owned together with the plugin's library: the library stays
// loaded for as long as the object lives, so its destructor and virtual functions never run from
// unloaded code, whatever order the owners are destroyed in.
#include <memory>
#include <utility>

namespace stormo {

template <class T>
struct LibraryBoundDelete {
    std::shared_ptr<const void> library;  // released only after the object is deleted
    void operator()(T* object) const { delete object; }
};

template <class T>
using LibraryBound = std::unique_ptr<T, LibraryBoundDelete<T>>;

template <class T>
LibraryBound<T> bind_to_library(std::unique_ptr<T> object, std::shared_ptr<const void> library) {
    return LibraryBound<T>(object.release(), LibraryBoundDelete<T>{std::move(library)});
}

}  // namespace stormo

#pragma once
// Symbols of the core library that plugins and the CLI call keep default visibility so that RTTI,
// exceptions and vtables resolve to one definition across shared-library boundaries.
#define STORMO_API __attribute__((visibility("default")))

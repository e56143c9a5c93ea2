#pragma once
// COLLIE_API marks what libcollie.so exports: the public API that the installed headers declare
// (cmake/Install.cmake lists them). Every module is compiled with -fvisibility=hidden and
// -fvisibility-inlines-hidden, so anything not marked stays internal to the shared library.
// Mark a class (not its members) when it has virtual functions or may be thrown, so its vtable
// and typeinfo are exported too: consumers derive from it, dynamic_cast to it or catch it.
// In-tree programs (tests, the collie command) link the same objects statically and see
// everything; the mark only matters for the installed shared library.
#if defined(__GNUC__) || defined(__clang__)
#define COLLIE_API __attribute__((visibility("default")))
#else
#define COLLIE_API
#endif

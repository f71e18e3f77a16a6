// A shared library that is not a pixflow plugin.
extern "C" int some_other_library_function(void) { return 42; }

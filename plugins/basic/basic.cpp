// basic.cpp: the basic plugin: synth, convert, grayscale.
#include "ops.hpp"

PIXFLOW_PLUGIN("basic", "1.0.0", pixflow::basic::Synth, pixflow::basic::Convert,
               pixflow::basic::Grayscale)

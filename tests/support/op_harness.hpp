// The operator tests use the SDK's own testing header, exactly as third-party authors do.
#pragma once

#include <pixflow/testing.hpp>

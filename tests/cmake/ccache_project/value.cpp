#include "value.hpp"

int value() { return zcoll_value; }

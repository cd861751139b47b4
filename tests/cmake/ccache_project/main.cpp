// Prints value() (value.cpp, from value.hpp) and zcoll_pch_value (pch_value.hpp, the precompiled header).
#include "pch_value.hpp"

#include <cstdio>

int value();

int main() { std::printf("%d %d\n", value(), zcoll_pch_value); }

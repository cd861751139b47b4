"""No std:: bit count in include/zcoll/ outside core/bits.hpp.

    check_bit_functions.py INCLUDE_DIR

nvcc 13 with libstdc++ 12 compiles std::countr_zero and std::countr_one (every width) and the 64-bit
std::countl_zero and std::popcount to constants in device code, silently (core/bits.hpp says more).
Any header may be compiled for the device, so every one calls zcoll::countr_zero and its siblings.
"""
import os
import re
import sys

root = os.path.join(sys.argv[1], "zcoll")
CALL = re.compile(r"std::(countr_zero|countr_one|countl_zero|countl_one|popcount)\s*\(")
found = []
for folder, _, files in os.walk(root):
    for name in files:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, root)
        if rel == os.path.join("core", "bits.hpp"):
            continue
        for number, line in enumerate(open(path), 1):
            for match in CALL.finditer(line):
                found.append(f"{rel}:{number}: std::{match.group(1)}: call zcoll::{match.group(1)} (core/bits.hpp)")
for item in found:
    print("bit functions:", item)
print(f"bit functions: {len(found)} calls of <bit>'s counts outside core/bits.hpp")
sys.exit(1 if found else 0)

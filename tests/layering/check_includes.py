"""The layering of DESIGN.md, checked on every #include of include/zcoll/: a folder includes only the
folders below it.

    check_includes.py INCLUDE_DIR

core/ includes only core/; the stages (quantize/, predict/, encode/, sparsify/, backend/) include core/ and their
own folder; codec/ does not include adapt/, collective/, embedding/ or transport/. An exception would be
listed in KNOWN with its reason (none is, since the stages' settings left codec_config); a new include
outside the rules fails, and so does an exception that is no longer needed.
"""
import os
import re
import sys

root = os.path.join(sys.argv[1], "zcoll")
STAGES = {"quantize", "predict", "encode", "sparsify", "backend"}
ALLOWED = {"core": {"core"}, **{s: {"core", s} for s in STAGES}}
FORBIDDEN = {"codec": {"adapt", "collective", "embedding", "transport"}}
KNOWN = {  # (file, included header): why it is still there
}
INCLUDE = re.compile(r'^#include "zcoll/([a-z_]+)/([^"]+)"', re.M)
broken, used = [], set()
for folder, _, files in os.walk(root):
    for name in files:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, root)
        top = rel.split(os.sep)[0]
        if top == rel:  # zcoll.hpp, fmt.hpp: umbrella headers include anything
            continue
        for target_folder, target in INCLUDE.findall(open(path).read()):
            included = f"{target_folder}/{target}"
            allowed = ALLOWED.get(top)
            bad = (allowed is not None and target_folder not in allowed) or target_folder in FORBIDDEN.get(top, set())
            if bad and (rel, included) in KNOWN:
                used.add((rel, included))
            elif bad:
                broken.append(f"{rel} includes {included}")
for item in broken:
    print("layering:", item)
for stale in sorted(set(KNOWN) - used):
    print(f"layering: {stale[0]} no longer includes {stale[1]}: remove it from KNOWN")
print(f"layering: {len(broken)} includes break the rules, {len(set(KNOWN) - used)} known exceptions are stale")
sys.exit(1 if broken or set(KNOWN) - used else 0)

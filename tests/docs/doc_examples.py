"""Compiles the C++ examples of the README and the guide as written.

    doc_examples.py OUT_DIR COMPILER INCLUDE_DIR [--include-dir DIR]... [--select REGEX] [--context CODE] FILE.md...

Every ```cpp block becomes the body of a function of its own in one translation unit per file; its
#include lines go to the top. The names an example uses but does not declare (the user's data) come from
an HTML comment on the line before the block, <!-- example-context: std::vector<float> field; -->, which a
reader of the rendered page does not see. The compiler must accept the file (-fsyntax-only) with -Werror.
--header adds an #include to every file; --include-dir adds a directory to search (<mpi.h>'s, for examples that include <zcoll/mpi.hpp>);
--select keeps only the blocks that match REGEX, --context gives their context where the file has no
comment for it (a document that is not the project's, such as DESIGN.md).
"""
import os
import re
import subprocess
import sys

out_dir, compiler, include_dir, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
extra_includes, extra_headers, select, default_context, files = [], [], None, "", []
while rest:
    arg = rest.pop(0)
    if arg == "--include-dir":
        extra_includes.append(rest.pop(0))
    elif arg == "--header":
        extra_headers.append(f"#include <{rest.pop(0)}>")
    elif arg == "--select":
        select = re.compile(rest.pop(0))
    elif arg == "--context":
        default_context = rest.pop(0)
    else:
        files.append(arg)
PRELUDE = """#include <zcoll/zcoll.hpp>
#include <zcoll/adapt/adaptive_config.hpp>
#include <zcoll/codec/keyed_state.hpp>
#include <zcoll/codec/registry.hpp>
#include <zcoll/embedding/fused_lookup.hpp>
#include <zcoll/transport/local.hpp>

#include <cstddef>
#include <sstream>
#include <span>
#include <vector>
"""
BLOCK = re.compile(r"(?:<!-- example-context: (.*?) -->\n)?```cpp\n(.*?)```", re.S)
failed = 0
for path in files:
    text = open(path).read()
    includes, functions = [], []
    blocks = [(context or default_context, body) for context, body in BLOCK.findall(text)]
    if select:
        blocks = [(context, body) for context, body in blocks if select.search(body)]
    for n, (context, body) in enumerate(blocks):
        lines = body.splitlines()
        includes += [line for line in lines if line.startswith("#include")]
        code = "\n".join(line for line in lines if not line.startswith("#include"))
        functions.append(f"[[maybe_unused]] void example_{n}() {{\n{context}\n{code}\n}}\n")
    if not functions:
        print(f"{path}: no ```cpp example")
        failed += 1
        continue
    source = os.path.join(out_dir, os.path.basename(path).replace(".md", "_examples.cpp"))
    with open(source, "w") as f:
        f.write("\n".join(sorted(set(includes + extra_headers))) + "\n" + PRELUDE + "\n" + "\n".join(functions))
    result = subprocess.run([compiler, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                             "-Wno-unused-variable", "-Wno-unused-but-set-variable", "-I", include_dir]
                            + [flag for d in extra_includes for flag in ("-isystem", d)] + [source],
                            capture_output=True, text=True)
    status = "ok" if result.returncode == 0 else "FAILED"
    print(f"{path}: {len(functions)} examples compiled: {status}")
    if result.returncode != 0:
        print(result.stderr[-4000:])
        failed += 1
sys.exit(1 if failed else 0)

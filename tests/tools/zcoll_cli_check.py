"""Drives the zcoll command-line tool as a user would: every registered codec round-trips a bundled field
through files, every element of the output is checked against the bound the stream states (here, not by
the tool), and bad input gets the documented exit status and a message that names the problem.

    zcoll_cli_check.py ZCOLL_BINARY FIELD.f32 WORK_DIR
"""
import array
import math
import os
import re
import subprocess
import sys

zcoll, field, work = sys.argv[1], sys.argv[2], sys.argv[3]
ROWS, ROW = 1632, 192  # the bundled echam5 field, 17 x 96 x 192, as rows of 192


def run(*args, status=0):
    r = subprocess.run([zcoll, *args], capture_output=True, text=True)
    assert r.returncode == status, f"zcoll {' '.join(args)}: exit {r.returncode}, expected {status}\n{r.stdout}{r.stderr}"
    return r.stdout + r.stderr


def values(path, code):
    a = array.array(code)
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


def stated_bound(stream):
    m = re.search(r"stated bound ([0-9.eE+-]+|inf)", run("info", "-i", stream))
    assert m, f"zcoll info names no stated bound for {stream}"
    return float(m.group(1))


original = values(field, "f")
assert len(original) == ROWS * ROW
codecs = [line.split()[0] for line in run("list").splitlines()]
assert "fzlight" in codecs and "highratio-2d" in codecs and "int8" in codecs, codecs

for codec in codecs:
    stream, out = os.path.join(work, codec + ".zc"), os.path.join(work, codec + ".f32")
    # 3072 values a chunk: a multiple of 32 and of the row length, which vector-LZ needs.
    report = run("compress", "-i", field, "--dims", f"{ROWS},{ROW}", "--rel", "1e-3", "--codec", codec,
                 "--chunk", "3072", "-o", stream)
    ratio = float(re.search(r"ratio ([0-9.]+)", report).group(1))
    assert abs(ratio - len(original) * 4 / os.path.getsize(stream)) < 1e-3 * ratio, (codec, report)
    info = run("info", "-i", stream)
    assert f"codec: {codec} " in info or codec in ("embedding-hybrid",), (codec, info)
    assert "held" in run("decompress", "-i", stream, "-o", out, "--compare", field), codec
    restored, bound = values(out, "f"), stated_bound(stream)
    assert len(restored) == len(original), codec
    for i, (x, y) in enumerate(zip(original, restored)):
        assert abs(x - y) <= bound, f"{codec}: element {i}: {x} -> {y}, stated bound {bound}"

# f64 data, a relative bound that holds on every element.
f64_in, f64_stream, f64_out = (os.path.join(work, n) for n in ("field.f64", "field64.zc", "field64.out"))
array.array("d", original).tofile(open(f64_in, "wb"))
run("compress", "-i", f64_in, "--type", "f64", "--dims", "17,96,192", "--rel", "1e-5", "--codec", "highratio-3d",
    "-o", f64_stream)
run("decompress", "-i", f64_stream, "-o", f64_out)
restored, bound = values(f64_out, "d"), stated_bound(f64_stream)
assert bound <= 1e-5 * (max(original) - min(original))
assert all(abs(x - y) <= bound for x, y in zip(original, restored))

# Tuned for rate and distortion at a coarse bound: the bound holds, the stream decodes as any other.
rd_stream, rd_out = os.path.join(work, "rd.zc"), os.path.join(work, "rd.f32")
run("compress", "-i", field, "--dims", "17,96,192", "--rel", "1e-2", "--codec", "highratio-2d", "--tuning",
    "rate-distortion", "-o", rd_stream)
run("decompress", "-i", rd_stream, "-o", rd_out)
single, bound = values(field, "f"), stated_bound(rd_stream)
assert all(abs(x - y) <= bound for x, y in zip(single, values(rd_out, "f")))

# Bad input: a clear message and the documented exit status (2: usage, 1: files and streams).
missing = os.path.join(work, "missing.f32")
assert "cannot open" in run("compress", "-i", missing, "--count", "4", "--abs", "1", "-o", f64_stream, status=1)
assert "holds 313344 values" in run("compress", "-i", field, "--dims", "10,10", "--abs", "1", "-o", stream,
                                    status=1)
msg = run("compress", "-i", field, "--count", "313344", "--abs", "1", "--codec", "nope", "-o", stream, status=2)
assert "'nope' is not registered" in msg and "fzlight" in msg, msg
assert "--abs E or --rel R" in run("compress", "-i", field, "--count", "313344", "-o", stream, status=2)
assert "is not a number" in run("compress", "-i", field, "--count", "313344", "--rel", "x", "-o", stream, status=2)
assert "unknown command" in run("squash", status=2)
assert "'psnr' is neither ratio nor rate-distortion" in run("compress", "-i", field, "--count", "313344", "--rel",
                                                            "1e-2", "--tuning", "psnr", "-o", stream, status=2)

good = open(os.path.join(work, "fzlight.zc"), "rb").read()
broken = os.path.join(work, "broken.zc")
for name, data in [("truncated", good[: len(good) // 2]),
                   ("version 1", good[:4] + bytes([1]) + good[5:]),
                   ("not a stream", b"this is not a zcoll stream at all, it is text............")]:
    open(broken, "wb").write(data)
    msg = run("decompress", "-i", broken, "-o", out, status=1)
    assert "format error" in msg, (name, msg)
    if name == "version 1":
        assert "format version 1" in msg, msg
print(f"zcoll CLI: {len(codecs)} codecs round-tripped through files within their stated bounds")

"""zcoll's codecs from Python: every registered codec on numpy arrays and CPU tensors of every dtype, the
bound checked on every element, adversarial values, damaged streams, zero-copy input and the GIL."""

import resource
import threading
import time

import numpy as np
import pytest
import torch

import zcoll

ROWS_CODECS = {"int8", "int4", "int2", "embedding-lz", "embedding-hybrid"}
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                "bfloat16": torch.bfloat16}


def make_codec(name, bound, n, threads=1):
    shape = (n // 16, 16) if name in ROWS_CODECS else None
    return zcoll.Codec(name, bound, shape=shape, threads=threads)


def field(n, dtype, seed=0):
    """A smooth field with noise, as a tensor of `dtype`."""
    g = torch.Generator().manual_seed(seed)
    x = torch.sin(torch.arange(n, dtype=torch.float64) / 37.0) * 10 + torch.randn(n, generator=g, dtype=torch.float64)
    return x.to(TORCH_DTYPES[dtype])


def assert_within(original, restored, bound, infinity_as_nan=False):
    """|x - y| <= bound on every finite element; NaN stays NaN and ±Inf stays itself (or becomes NaN, for
    a format without infinities: FP8 E4M3)."""
    x = original.double() if isinstance(original, torch.Tensor) else torch.from_numpy(np.asarray(original, np.float64))
    y = restored.double() if isinstance(restored, torch.Tensor) else torch.from_numpy(np.asarray(restored, np.float64))
    assert x.shape == y.shape
    finite = torch.isfinite(x)
    err = (x[finite] - y[finite]).abs()
    if err.numel():
        worst = int(err.argmax())
        assert float(err[worst]) <= bound, f"element error {float(err[worst])} > bound {bound}"
    assert torch.isnan(y[torch.isnan(x)]).all()
    inf = torch.isinf(x)
    if infinity_as_nan:
        assert torch.isnan(y[inf]).all()
    else:
        assert torch.equal(x[inf], y[inf])


@pytest.mark.parametrize("name", zcoll.codec_names())
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_round_trip_every_codec_and_dtype(name, dtype):
    n = 16 * 333  # whole rows of 16, not a multiple of 32
    x = field(n, dtype)
    codec = make_codec(name, zcoll.relative(1e-3), n)
    stream = codec.compress(x)
    assert stream.dtype == torch.uint8
    info = zcoll.stream_info(stream)
    assert info["count"] == n
    # Hybrid writes the stream of the codec it picks for the data (embedding-huffman or embedding-lz).
    assert info["codec"] == name or name == "embedding-hybrid"
    restored, bound = codec.decompress_with_bound(stream, dtype=x.dtype)
    assert restored.dtype == x.dtype
    assert_within(x, restored, bound)
    if dtype in ("float32", "float64"):  # the same bytes through numpy
        assert np.array_equal(codec.compress(x.numpy()), stream.numpy())


@pytest.mark.parametrize("name", ["fzlight", "highratio-1d", "linear-bitshuffle", "lorenzo-raw", "identity",
                                  "embedding-huffman", "topk", "fp16", "fp8-e4m3"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adversarial_values(name, dtype):
    np_dtype = np.float32 if dtype == "float32" else np.float64
    info = np.finfo(np_dtype)
    cases = {
        "empty": np.zeros(0, np_dtype),
        "one": np.array([3.25], np_dtype),
        "constant": np.full(1001, -7.5, np_dtype),
        "specials": np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny / 4, 1.0, -np.nan] * 13, np_dtype),
        "huge range": np.array([info.max, -info.max, 1e-30, 0.0, 12.5] * 41, np_dtype),
        "denormals": (np.arange(333, dtype=np_dtype) * info.tiny / 512).astype(np_dtype),
    }
    for case, x in cases.items():
        codec = zcoll.Codec(name, zcoll.relative(1e-3))
        stream = codec.compress(x)
        restored, bound = codec.decompress_with_bound(stream)
        assert restored.dtype == x.dtype, case
        assert_within(x, restored, bound, infinity_as_nan=name == "fp8-e4m3")


@pytest.mark.parametrize("name", zcoll.codec_names())
def test_damaged_streams_raise_format_error(name):
    n = 16 * 100
    x = field(n, "float32").numpy()
    codec = make_codec(name, zcoll.relative(1e-3), n)
    stream = codec.compress(x)
    for cut in sorted({0, 1, 8, 47, 48, 49, len(stream) // 2, len(stream) - 1}):
        if cut < len(stream):
            with pytest.raises(zcoll.FormatError):
                codec.decompress(stream[:cut], out=np.empty(n, np.float32))
    rng = np.random.default_rng(7)
    for _ in range(200):  # a damaged byte either decodes (to some values) or raises FormatError, never crashes
        damaged = stream.copy()
        damaged[rng.integers(len(damaged))] ^= np.uint8(1 << rng.integers(8))
        try:
            codec.decompress(damaged, out=np.empty(n, np.float32))
        except zcoll.FormatError:
            pass
    assert issubclass(zcoll.FormatError, zcoll.Error)


def test_top_level_decompress_reads_the_codec_from_the_stream():
    x = field(4096, "float64").numpy()
    stream = zcoll.Codec("highratio-1d", zcoll.absolute(1e-2)).compress(x)
    assert_within(x, zcoll.decompress(stream), 1e-2)


def test_rate_distortion_tuning_trades_bytes_for_error():
    # A smooth 2-D field at a coarse bound: tuned for rate and distortion, HighRatio narrows the bins of
    # the interpolation's coarse levels, for less error (and other bytes: with the coder's contexts of
    # each level, not necessarily more); the bound holds either way, and any HighRatio-2d decodes either
    # stream.
    y, x = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    data = (100 * np.sin(0.05 * x) * np.cos(0.07 * y)).astype(np.float32)
    plain = zcoll.Codec("highratio-2d", zcoll.relative(1e-2), shape=data.shape)
    tuned = zcoll.Codec("highratio-2d", zcoll.relative(1e-2), shape=data.shape, tuning="rate-distortion")
    assert tuned.tuning == "rate-distortion" and plain.tuning == "ratio"
    assert "tuning='rate-distortion'" in repr(tuned) and "tuning" not in repr(plain)
    a, b = plain.compress(data), tuned.compress(data)
    eb = 1e-2 * float(data.max() - data.min())
    ra, rb = plain.decompress(a).reshape(data.shape), plain.decompress(b).reshape(data.shape)
    assert_within(data, ra, eb)
    assert_within(data, rb, eb)
    assert b != a
    assert np.mean((rb.astype(np.float64) - data) ** 2) < np.mean((ra.astype(np.float64) - data) ** 2)


def test_argument_errors_name_the_argument():
    with pytest.raises(zcoll.ArgumentError, match="not registered"):
        zcoll.Codec("no-such-codec")
    with pytest.raises(ValueError, match="must be finite"):  # ArgumentError is a ValueError too
        zcoll.relative(-1)
    with pytest.raises(zcoll.ArgumentError, match="threads"):
        zcoll.Codec("fzlight", threads=0)
    with pytest.raises(zcoll.ArgumentError, match="tuning: 'psnr'; expected 'ratio' or 'rate-distortion'"):
        zcoll.Codec("highratio-2d", zcoll.relative(1e-2), tuning="psnr")
    with pytest.raises(zcoll.ArgumentError, match="shape"):
        zcoll.Codec("int8")
    codec = zcoll.Codec("fzlight", zcoll.relative(1e-3))
    with pytest.raises(zcoll.ArgumentError, match="not contiguous"):
        codec.compress(torch.zeros(64, 64).t())
    with pytest.raises(zcoll.ArgumentError, match="dtype"):
        codec.compress(np.zeros(10, np.int32))
    with pytest.raises(zcoll.FormatError, match="out holds"):
        codec.decompress(codec.compress(np.zeros(10, np.float32)), out=np.empty(11, np.float32))
    with pytest.raises(zcoll.ArgumentError, match="whole number of rows"):
        zcoll.Codec("int8", shape=(16,)).compress(np.zeros(20, np.float32))


def _peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_compressing_a_256_mb_tensor_does_not_copy_it():
    n = 64 << 20  # 256 MB of float32
    x = torch.zeros(n)
    x[::4096] = 1.0  # touched: resident before the measurement
    codec = zcoll.Codec("fzlight", zcoll.absolute(1e-3))
    out = torch.zeros(codec.max_compressed_size(n), dtype=torch.uint8)  # resident too: only a copy adds to the peak
    before = _peak_rss_bytes()
    stream = codec.compress(x, out=out)
    grown = _peak_rss_bytes() - before
    assert len(stream) < n  # compressed
    assert grown < 32 << 20, f"compressing a 256 MB tensor raised the peak RSS by {grown / 2**20:.1f} MiB"


def test_the_gil_is_released_while_coding():
    x = field(1 << 23, "float32")
    codec = zcoll.Codec("highratio-1d", zcoll.relative(1e-4))
    done = threading.Event()

    def work():
        for _ in range(4):
            codec.compress(x)
        done.set()

    t = threading.Thread(target=work)
    ticks = 0
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    # Four compressions of 32 MB take about a second. With the GIL held through each, this thread would
    # run only in the gaps between them (a few ticks); released, it ticks all along (hundreds, or at least
    # dozens on a loaded machine).
    assert ticks >= 30, f"{ticks} ticks beside four compressions"

"""zcoll over torch.distributed: compressed collectives through the process group you already have, and
a DDP communication hook with a stated error bound on every gradient element.

    import zcoll, zcoll.torch
    coll = zcoll.torch.Collectives("fzlight", zcoll.relative(1e-4))       # the default group
    report = coll.allreduce(grad, op="avg")          # in place; report["error_bound"] holds on every element
    handle = coll.allreduce(grad, async_op=True)     # handle.get_future() is a torch.futures.Future
    ddp.register_comm_hook(zcoll.torch.HookState(error_bound=zcoll.absolute(1e-5)), zcoll.torch.allreduce_hook)

zcoll's C++ engine compresses, reduces and decompresses; the process group moves the bytes (its send and
recv on CPU tensors of bytes). Calls of one Collectives object run in the order they were made, on a
thread of its own, so a non-blocking call returns at once and nothing ever blocks inside a future's
callback. CUDA tensors are coded on their GPU (zcoll._zcoll_cuda, on torch's current stream at the call);
only the compressed bytes cross to the host for the group, which must move CPU tensors (gloo, MPI): with
NCCL for the model, give Collectives a gloo group (dist.new_group(backend="gloo")). docs/python.md.
"""

import datetime
import itertools
import queue
import threading
import weakref

import torch
import torch.distributed as dist

from . import ArgumentError, Codec, _check_bound, _cuda, _zcoll, relative
from ._arrays import values_buffer

__all__ = ["Collectives", "Handle", "HookState", "allreduce_hook", "TableWiseAlltoall"]

_OPS = {"sum": "sum", "avg": "sum", "min": "min", "max": "max"}


def _op_name(op):
    if isinstance(op, str):
        if op not in _OPS:
            raise ArgumentError(f"op: '{op}'; expected 'sum', 'avg', 'min' or 'max' (or a torch.distributed.ReduceOp)")
        return op
    for name, reduce_op in (("sum", dist.ReduceOp.SUM), ("min", dist.ReduceOp.MIN), ("max", dist.ReduceOp.MAX),
                            ("avg", getattr(dist.ReduceOp, "AVG", None))):
        if reduce_op is not None and op == reduce_op:
            return name
    raise ArgumentError(f"op: {op}; expected SUM, AVG, MIN or MAX")


class _GroupTransport:
    """The byte transport zcoll's engine calls (python/src/python_transport.hpp): one process group's
    send and recv, ranks and tags as the group numbers them."""

    def __init__(self, group, timeout):
        self.group = group
        self.rank = group.rank()
        self.size = group.size()
        self.timeout = timeout

    def isend(self, peer, tag, view):
        return self.group.send([torch.frombuffer(view, dtype=torch.uint8)], peer, tag)

    def irecv(self, peer, tag, view):
        return self.group.recv([torch.frombuffer(view, dtype=torch.uint8)], peer, tag)

    def wait(self, work):
        # A peer that never sends (it failed before the call) ends in a TransportError after the timeout
        # instead of a hang.
        if not work.wait(self.timeout):
            raise RuntimeError(f"no message within {self.timeout}")

    def test(self, work):
        return work.is_completed()


# Tag spaces: the n-th Collectives made on a process group uses tags from n × _TAG_SPACE, as the MPI
# faces give each collective a communicator of its own. Every rank must make them in the same order.
_TAG_SPACE = 1 << 16
_tag_counters = weakref.WeakKeyDictionary()


def _next_tag_base(group):
    counter = _tag_counters.setdefault(group, itertools.count(1))
    return next(counter) * _TAG_SPACE


class Handle:
    """A call in flight, as torch.distributed's async_op=True returns a Work."""

    def __init__(self, future):
        self._future = future
        self.report = None  # the call's report (a dict), once it has completed

    def wait(self):
        """Waits for the call; its report. Raises the call's error (a zcoll.Error)."""
        self._future.wait()
        return self.report

    def is_completed(self):
        return self._future.done()

    def get_future(self):
        """A torch.futures.Future whose value is the output tensor."""
        return self._future


class _Worker:
    """One thread that runs a Collectives' calls in order (zcoll's engine takes the calls of one
    collective one thread at a time) and completes their futures."""

    def __init__(self):
        self._jobs = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="zcoll-collectives", daemon=True)
        self._thread.start()

    def submit(self, job, future):
        self._jobs.put((job, future))

    def _run(self):
        while True:
            job, future = self._jobs.get()
            try:
                result = job()
            except BaseException as e:  # noqa: B902 - every failure goes to the caller's future
                future.set_exception(e)
            else:
                future.set_result(result)


class Collectives:
    """Compressed collectives on a torch.distributed process group.

    codec: fzlight (error-bounded), identity (exact), int8/int4 (rows of shape[-1] values, float32);
    error_bound: zcoll.absolute or zcoll.relative; group: a process group (default: the default group);
    schedule: 'ring' or 'recursive_doubling' for allreduce; threads: host threads for coding; verify:
    the ranks agree on every call's arguments and on any error met during it, so a rank that fails
    makes every rank raise instead of leaving them waiting (docs/reliability.md); homomorphic: sums
    added on compressed streams (each contribution quantized once); timeout: how long a message may
    take before the call fails.

    Tensors on a CUDA device (fzlight, int8, int4) are coded there: each call's outgoing blocks in
    batches on torch's current stream, through staging buffers of this object kept between calls (one
    device per object); every rank passes tensors of the same kind. _host_staging: CPU tensors take the
    steps CUDA tensors take, on the host (how the tests run that path without a GPU).
    """

    def __init__(self, codec="fzlight", error_bound=None, *, group=None, schedule="ring", threads=1, verify=False,
                 homomorphic=False, min_compressed_bytes=0, pipeline_values=1 << 18, chunk_values=0, shape=None,
                 timeout=datetime.timedelta(minutes=5), _host_staging=False):
        if not dist.is_initialized():
            raise ArgumentError("Collectives: torch.distributed is not initialized; call "
                                "torch.distributed.init_process_group first")
        bound = _check_bound(error_bound if error_bound is not None else relative(1e-4))
        if not isinstance(threads, int) or threads < 1:
            raise ArgumentError(f"threads: {threads!r}; expected an int >= 1")
        self.group = group if group is not None else dist.distributed_c10d._get_default_group()
        self.codec = codec
        self.error_bound = bound
        self.rank = self.group.rank()
        self.size = self.group.size()
        self._transport = _GroupTransport(self.group, timeout)
        # The engine's arguments after (transport, tag base); the device engine, made at the first CUDA
        # tensor, has a tag space of its own, taken now so that every rank numbers it alike.
        self._settings = (codec, bound.mode, bound.value, int(chunk_values), list(shape or ()), schedule, threads,
                          bool(verify), bool(homomorphic), int(min_compressed_bytes), int(pipeline_values))
        self._collective = _zcoll.Collective(self._transport, _next_tag_base(self.group), *self._settings,
                                             staged=bool(_host_staging))
        self._device_tag_base = _next_tag_base(self.group)
        self._device_collective = None
        self._worker = _Worker()

    def allreduce(self, tensor, op="sum", async_op=False):
        """In place, as torch.distributed.all_reduce; op 'avg' divides the sum by the ranks (the report's
        bound is then that of the average)."""
        name = _op_name(op)
        calls, view = self._place(tensor)
        values, dtype = view(tensor, "allreduce: tensor", writable=True)

        def run():
            return self._finish(name, tensor, calls, calls.allreduce(None, values, dtype, _OPS[name]).wait())

        return self._call(run, tensor, async_op)

    def reduce_scatter(self, output, input, op="sum", async_op=False):
        """output = block rank of the reduction of every rank's input (input.numel() == size × output.numel())."""
        name = _op_name(op)
        calls, view = self._place(output, input)
        src, dtype = view(input, "reduce_scatter: input")
        dst, out_dtype = view(output, "reduce_scatter: output", writable=True)
        self._same_dtype("reduce_scatter", dtype, out_dtype)

        def run():
            return self._finish(name, output, calls, calls.reduce_scatter(src, dst, dtype, _OPS[name]).wait())

        return self._call(run, output, async_op)

    def all_gather(self, output, input, async_op=False):
        """output = every rank's input, in rank order (all_gather_into_tensor's layout)."""
        calls, view = self._place(output, input)
        src, dtype = view(input, "all_gather: input")
        dst, out_dtype = view(output, "all_gather: output", writable=True)
        self._same_dtype("all_gather", dtype, out_dtype)
        return self._call(lambda: calls.allgather(src, dst, dtype).wait(), output, async_op)

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None, async_op=False):
        """As torch.distributed.all_to_all_single: blocks along dim 0, equal or of the given split sizes."""
        calls, view = self._place(output, input)
        src, dtype = view(input, "all_to_all_single: input")
        dst, out_dtype = view(output, "all_to_all_single: output", writable=True)
        self._same_dtype("all_to_all_single", dtype, out_dtype)
        if output_split_sizes is None and input_split_sizes is None:
            job = lambda: calls.alltoall(src, dst, dtype).wait()  # noqa: E731
        else:
            send = self._value_counts("input_split_sizes", input_split_sizes, input)
            recv = self._value_counts("output_split_sizes", output_split_sizes, output)
            job = lambda: calls.alltoallv(src, send, dst, recv, dtype).wait()  # noqa: E731
        return self._call(job, output, async_op)

    def _value_counts(self, name, splits, tensor):
        rows = tensor.shape[0] if tensor.dim() > 0 else 0
        per_row = tensor.numel() // rows if rows else 0
        if splits is None:
            if rows % self.size != 0:
                raise ArgumentError(f"{name}: None, but {rows} rows do not split evenly over {self.size} ranks")
            return [rows // self.size * per_row] * self.size
        splits = [int(s) for s in splits]
        if len(splits) != self.size or sum(splits) != rows or min(splits) < 0:
            raise ArgumentError(f"{name}: {splits}; expected {self.size} row counts >= 0 summing to {rows}")
        return [s * per_row for s in splits]

    def _place(self, output, *inputs):
        """(calls, view) for a call's tensors: the host engine and values_buffer for CPU tensors, the
        device engine on torch's current stream and device_values for CUDA ones (all on one device)."""
        devices = {t.device for t in (output, *inputs) if hasattr(t, "device")}
        if len(devices) > 1:
            raise ArgumentError(f"the call's tensors are on {sorted(str(d) for d in devices)}; expected one device")
        if not _cuda.is_cuda_tensor(output):
            return _cuda.HostCalls(self._collective), values_buffer
        if self._device_collective is None:
            self._device_collective = _cuda.module().Collective(self._transport, self._device_tag_base, *self._settings)
        stream = _cuda.current_stream(output.device)
        return _cuda.DeviceCalls(self._device_collective, output.device, stream, (output, *inputs)), _cuda.device_values

    def _finish(self, op, output, calls, report):
        """An average is the sum divided by the ranks, and so are its bounds (the division on the call's
        stream, waited for: the call completes with its output written)."""
        if op == "avg":
            with calls.finishing():
                output.div_(self.size)
            calls.finished()
            report["error_bound"] /= self.size
            report["statistical_error_bound"] /= self.size
        return report

    @staticmethod
    def _same_dtype(call, a, b):
        if a != b:
            raise ArgumentError(f"{call}: input is {a}, output is {b}; expected the same dtype")

    def _call(self, job, output, async_op):
        future = torch.futures.Future()
        handle = Handle(future)

        def run():
            handle.report = job()
            return output

        self._worker.submit(run, future)
        return handle if async_op else handle.wait()


class TableWiseAlltoall:
    """The DLRM compression paper's embedding all-to-all (C++ embedding::TableWiseAlltoall): each
    destination's block is one segment per table, each compressed on its own at its table's bound
    (zcoll.adapt gives table-wise bounds), their sizes sent first, then one message per destination.
    QComms' fixed-size buffers cannot carry such streams; this moves them over the process group.

        a2a = zcoll.torch.TableWiseAlltoall("embedding-hybrid", dim=16)
        report = a2a.exchange(out, inp, send_segments, recv_segments, bounds)

    Segments are (peer, table, values) in non-decreasing peer order; `inp` holds the send segments one
    after another and `out` receives the recv segments likewise; rank b's send segments to this rank are
    this rank's recv segments from b. bounds[table] is each table's absolute bound, the same on every
    rank. A pair of ranks that disagrees is a FormatError on the receiver after the exchange, so no rank
    is left waiting. Blocking, float32.
    """

    def __init__(self, codec="embedding-hybrid", dim=None, *, group=None, threads=1, chunk_values=0,
                 timeout=datetime.timedelta(minutes=5)):
        if not dist.is_initialized():
            raise ArgumentError("TableWiseAlltoall: torch.distributed is not initialized")
        if not isinstance(dim, int) or dim < 1:
            raise ArgumentError(f"dim: {dim!r}; expected the embedding dimension (an int >= 1)")
        self.group = group if group is not None else dist.distributed_c10d._get_default_group()
        self._alltoall = _zcoll.TableAlltoall(_GroupTransport(self.group, timeout), _next_tag_base(self.group), codec,
                                              dim, int(chunk_values), int(threads))

    def exchange(self, output, input, send_segments, recv_segments, bounds):
        src, dtype = values_buffer(input, "exchange: input")
        dst, out_dtype = values_buffer(output, "exchange: output", writable=True)
        if dtype != "float32" or out_dtype != "float32":
            raise ArgumentError(f"exchange: input {dtype}, output {out_dtype}; expected float32")
        return self._alltoall.exchange(src, [tuple(s) for s in send_segments], dst, [tuple(s) for s in recv_segments],
                                       [float(b) for b in bounds])


class HookState:
    """The state of zcoll's DDP communication hook.

    codec and error_bound as Collectives takes them (an absolute bound states the same bound for every
    bucket; a relative one is relative to each bucket's range); error_feedback: keep what compression
    left out of each parameter's gradient and add it to the next step's (residuals per parameter, so they
    survive DDP's bucket rebuild after the first step); the remaining arguments go to Collectives.
    After each step `reports` maps each bucket index to its allreduce's report: report["error_bound"]
    holds on every element of the averaged gradient (of the compensated gradients with error feedback).
    """

    def __init__(self, codec="fzlight", error_bound=None, *, group=None, error_feedback=False, **collective_args):
        self.error_bound = _check_bound(error_bound if error_bound is not None else relative(1e-4))
        self.collectives = Collectives(codec, self.error_bound, group=group, **collective_args)
        self.error_feedback = bool(error_feedback)
        self._codec = Codec(codec, self.error_bound) if self.error_feedback else None
        self.residuals = {}  # parameter -> residual tensor (the parameter's shape, the gradient's dtype)
        self.reports = {}    # bucket index -> the report of its last allreduce


def _bucket_slices(bucket):
    offset = 0
    for p in bucket.parameters():
        n = p.numel()
        yield p, slice(offset, offset + n)
        offset += n


def _add_error_feedback(state, bucket, buffer):
    """Adds each parameter's residual to its gradient, and keeps what the codec will leave out of the
    compensated gradient as the next residual: x - decompress(compress(x)), this rank's quantization of
    its contribution (exact with homomorphic sums and an absolute bound: then each contribution is
    quantized once, at this bin width)."""
    for p, where in _bucket_slices(bucket):
        residual = state.residuals.get(p)
        if residual is not None and residual.numel() == where.stop - where.start and residual.dtype == buffer.dtype:
            buffer[where].add_(residual.view(-1))
    restored = state._codec.decompress(state._codec.compress(buffer), dtype=buffer.dtype)
    residual = buffer - restored
    for p, where in _bucket_slices(bucket):
        state.residuals[p] = residual[where].clone()


def allreduce_hook(state, bucket):
    """DDP communication hook: the bucket's gradients averaged by zcoll's compressed allreduce.

    ddp.register_comm_hook(zcoll.torch.HookState(...), zcoll.torch.allreduce_hook). float32, float16
    and bfloat16 gradients; the returned future completes on zcoll's thread, so DDP never waits inside
    a callback.
    """
    buffer = bucket.buffer()
    if state.error_feedback:
        _add_error_feedback(state, bucket, buffer)
    index = bucket.index()
    handle = state.collectives.allreduce(buffer, op="avg", async_op=True)

    def record(future):
        state.reports[index] = handle.report
        return future.value()

    return handle.get_future().then(record)

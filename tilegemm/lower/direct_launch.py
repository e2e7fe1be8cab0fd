"""Launching a compiled kernel straight through cuLaunchKernelEx, its parameters built once.

CuTe DSL's host function (launcher.py) encodes every TMA descriptor again on
every call, then launches. A DirectLauncher learns once what that function
launches on one GPU: it captures the launch into a CUDA graph and reads the
kernel, its launch configuration and the bytes of its parameters; it captures
again with other addresses to find where each array's address sits in those
bytes (`address_slots`), and checks that rule on a third capture. A call then
writes the addresses into the parameter bytes and launches: no encoding, no
Python-to-C conversion beyond one ctypes call. Where the rule does not hold
(an address stored other than as its 8 bytes), `learn` returns None and the
caller keeps the host function.
"""
import ctypes
import functools
import threading

from cuda.bindings import driver as cu

from ..errors import LaunchError

# Addresses the learning captures are made with (never dereferenced: the captured graph is not launched).
# Each probe moves every address by a different multiple of 16 bytes, so an address-derived bit stored
# anywhere but in the address itself shows up as an unexplained difference.
PROBE_BASE = 0x7A0000000000
PROBE_STEP = 0x10000000          # between the arrays of one probe
PROBE_SHIFTS = (0, 0x12340, 0x5678A0)


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id and a 64-byte value (for the cluster dimension: three uint32 x, y, z)."""
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_uint32), ("value", ctypes.c_uint32 * 16)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig: grid, block, dynamic shared memory, stream, attributes."""
    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3), ("shared_mem_bytes", ctypes.c_uint32),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint32)]


class CapturedLaunch:
    """One kernel launch as a graph recorded it: the function, launch dimensions and each parameter's bytes."""

    def __init__(self, function, grid, block, shared_mem_bytes, cluster, params):
        self.function, self.grid, self.block = function, grid, block
        self.shared_mem_bytes, self.cluster, self.params = shared_mem_bytes, cluster, params

    def same_launch(self, other):
        return (self.function, self.grid, self.block, self.shared_mem_bytes, self.cluster,
                [len(p) for p in self.params]) == (other.function, other.grid, other.block, other.shared_mem_bytes,
                                                   other.cluster, [len(p) for p in other.params])


def address_slots(probes, captures):
    """Where each address of a launch lives in its parameter bytes: for every array i, the (parameter, byte
    offset) pairs that hold probes[j][i] as 8 little-endian bytes in captures[j], for every j. None unless
    those slots explain every byte that differs between the captures."""
    first = captures[0]
    slots = [[] for _ in probes[0]]
    explained = [bytearray(len(p)) for p in first]
    for i, address in enumerate(probes[0]):
        needle = address.to_bytes(8, "little")
        for p, data in enumerate(first):
            start = data.find(needle)
            while start >= 0:
                if all(capture[p][start:start + 8] == probe[i].to_bytes(8, "little")
                       for probe, capture in zip(probes[1:], captures[1:])):
                    slots[i].append((p, start))
                    explained[p][start:start + 8] = b"\1" * 8
                start = data.find(needle, start + 1)
    for p, data in enumerate(first):
        for capture in captures[1:]:
            if any(a != b and not explained[p][k] for k, (a, b) in enumerate(zip(data, capture[p]))):
                return None
    return slots


def patched(params, slots, addresses):
    """The parameter bytes `params` with every slot of array i set to addresses[i]."""
    out = [bytearray(p) for p in params]
    for i, places in enumerate(slots):
        for p, offset in places:
            out[p][offset:offset + 8] = addresses[i].to_bytes(8, "little")
    return [bytes(p) for p in out]


def capture(host_launch, pointers):
    """The CapturedLaunch that `host_launch(pointers, stream)` records on a fresh stream (nothing runs)."""
    stream = _call(cu.cuStreamCreate, cu.CUstream_flags.CU_STREAM_NON_BLOCKING)
    try:
        _call(cu.cuStreamBeginCapture, stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        try:
            host_launch(pointers, int(stream))
        finally:
            graph = _call(cu.cuStreamEndCapture, stream)
        try:
            return _read_kernel_node(graph)
        finally:
            _call(cu.cuGraphDestroy, graph)
    finally:
        _call(cu.cuStreamDestroy, stream)


def _read_kernel_node(graph):
    err, nodes, count = cu.cuGraphGetNodes(graph, 2)
    if err != cu.CUresult.CUDA_SUCCESS or count != 1:
        return None
    (node,) = nodes[:1]
    if _call(cu.cuGraphNodeGetType, node) != cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
        return None
    node_params = _call(cu.cuGraphKernelNodeGetParams, node)
    function = node_params.func if int(node_params.func) else _call(cu.cuKernelGetFunction, node_params.kern)
    sizes = []
    while True:
        err, _, size = cu.cuFuncGetParamInfo(function, len(sizes))
        if err != cu.CUresult.CUDA_SUCCESS:
            break
        sizes.append(size)
    table = node_params.kernelParams
    params = [ctypes.string_at(ctypes.c_void_p.from_address(table + 8 * i).value, size)
              for i, size in enumerate(sizes)]
    cluster_id = cu.CUkernelNodeAttrID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dims = _call(cu.cuGraphKernelNodeGetAttribute, node, cluster_id).clusterDim
    return CapturedLaunch(int(function), (node_params.gridDimX, node_params.gridDimY, node_params.gridDimZ),
                          (node_params.blockDimX, node_params.blockDimY, node_params.blockDimZ),
                          node_params.sharedMemBytes, (dims.x, dims.y, dims.z), params)


def learn(host_launch, num_pointers, name):
    """A DirectLauncher for the launches `host_launch(pointers, stream)` makes on the current GPU, or None when
    its parameters do not hold each address as plain bytes (see the module docstring)."""
    probes = [[PROBE_BASE + i * PROBE_STEP + shift for i in range(num_pointers)] for shift in PROBE_SHIFTS]
    captures = [capture(host_launch, probe) for probe in probes]
    if any(c is None for c in captures) or not all(captures[0].same_launch(c) for c in captures[1:]):
        return None
    slots = address_slots(probes[:2], [c.params for c in captures[:2]])
    if slots is None or not all(slots) or patched(captures[0].params, slots, probes[2]) != captures[2].params:
        return None
    return DirectLauncher(captures[0], slots, name)


class DirectLauncher:
    """`launcher(pointers, stream)`: launches a learned kernel with the addresses written into its parameters."""

    def __init__(self, launch, slots, name):
        self.name = name
        self._function = ctypes.c_void_p(launch.function)
        self._buffers = [ctypes.create_string_buffer(bytes(p), max(len(p), 1)) for p in launch.params]
        self._table = (ctypes.c_void_p * max(len(self._buffers), 1))(
            *[ctypes.addressof(b) for b in self._buffers])
        self._cells = [[ctypes.c_uint64.from_buffer(self._buffers[p], offset) for p, offset in places]
                       for places in slots]
        self._attribute = LaunchAttribute(id=int(cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION))
        self._attribute.value[0:3] = list(launch.cluster)
        self._config = LaunchConfig(grid=(ctypes.c_uint32 * 3)(*launch.grid),
                                    block=(ctypes.c_uint32 * 3)(*launch.block),
                                    shared_mem_bytes=launch.shared_mem_bytes, stream=None,
                                    attrs=ctypes.pointer(self._attribute), num_attrs=1)
        self._launch = _driver().cuLaunchKernelEx
        self._lock = threading.Lock()   # the parameter bytes are shared: one launch through them at a time

    def __call__(self, pointers, stream):
        with self._lock:
            for cells, address in zip(self._cells, pointers):
                for cell in cells:
                    cell.value = address
            self._config.stream = stream
            error = self._launch(ctypes.byref(self._config), self._function, self._table, None)
        if error:
            raise LaunchError(f"launching {self.name} failed with {cu.CUresult(error).name}")


@functools.cache
def _driver():
    """libcuda's cuLaunchKernelEx, called through ctypes (one C call, no argument conversion)."""
    library = ctypes.CDLL("libcuda.so.1")
    library.cuLaunchKernelEx.argtypes = [ctypes.POINTER(LaunchConfig), ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_void_p]
    library.cuLaunchKernelEx.restype = ctypes.c_int
    return library


def _call(function, *args):
    result, *values = function(*args)
    if result != cu.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"{function.__name__} failed with {result.name} while learning a kernel's launch")
    return values[0] if values else None

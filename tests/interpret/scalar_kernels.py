"""Kernels that read int32 scalars at run time (`idx[i]`) and use them as indices, conditions and loop bounds, with
their inputs and the numpy result: shared by the interpreter, lowering and GPU tests.

`CASES[name]()` gives (kernel, inputs, expected); NaN in `expected` marks elements the kernel does not write
(the interpreter's outputs start as NaN, the GPU's are uninitialised).
"""
import numpy as np

import tilegemm as tg

T = 64
F16 = tg.float16


def tile_rows_at_offsets(rows, blocks):
    """c[b*T:(b+1)*T] = a[off[b] : off[b] + T], one TMA copy per block at a row offset read at run time."""
    @tg.kernel(out_shape=tg.ShapeDtype((blocks * T, T), F16), grid=(blocks,), grid_names=("b",),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def rows_at_offsets(a, off, c, a_smem, loaded):
        b = tg.axis_index("b")
        tg.copy_gmem_to_smem(a.at[tg.ds(off[b], T), :], a_smem, loaded)
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(a_smem, c.at[tg.ds(b * T, T), :])
        tg.wait_smem_to_gmem(0)
    return rows_at_offsets


def expert_weights(blocks):
    """c[b*T:(b+1)*T] = w[ids[b]]: a batch (expert) index read at run time selects a matrix of a 3-D array."""
    @tg.kernel(out_shape=tg.ShapeDtype((blocks * T, T), F16), grid=(blocks,), grid_names=("b",),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def expert_weight(w, ids, c, w_smem, loaded):
        b = tg.axis_index("b")
        tg.copy_gmem_to_smem(w.at[ids[b], :, :], w_smem, loaded)
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(w_smem, c.at[tg.ds(b * T, T), :])
        tg.wait_smem_to_gmem(0)
    return expert_weight


def stores_at_offsets(rows, blocks):
    """c[off[b] : off[b] + T] = a[b]: a TMA store at a row offset read at run time (clipped at c's edge)."""
    @tg.kernel(out_shape=tg.ShapeDtype((rows, T), F16), grid=(blocks,), grid_names=("b",),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def store_at_offsets(a, off, c, a_smem, loaded):
        b = tg.axis_index("b")
        tg.copy_gmem_to_smem(a.at[b], a_smem, loaded)
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(a_smem, c.at[tg.ds(off[b], T), :])
        tg.wait_smem_to_gmem(0)
    return store_at_offsets


def copy_when_flag_set():
    """c = a where flag[0] != 0, else zeros: a condition on a scalar read at run time."""
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), tg.float32),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def when_flag_set(a, flag, c, a_smem, loaded):
        c[...] = tg.zeros((T, T), tg.float32)

        @tg.when(flag[0] != 0)
        def _copy():
            tg.copy_gmem_to_smem(a, a_smem, loaded)
            tg.barrier_wait(loaded)
            c[...] = a_smem[...].astype(tg.float32)
    return when_flag_set


def clamped_by_cond():
    """c = a[max(idx[0], 0)], the clamp written with tg.cond on the scalar read."""
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), F16), scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def clamped(a, idx, c, a_smem, loaded):
        first = tg.cond(idx[0] < 0, lambda: 0, lambda: idx[0])
        tg.copy_gmem_to_smem(a.at[first], a_smem, loaded)
        tg.barrier_wait(loaded)
        tg.copy_smem_to_gmem(a_smem, c)
        tg.wait_smem_to_gmem(0)
    return clamped


def sum_of_first_n():
    """c = a[0] + ... + a[n[0] - 1] in f32: a fori_loop whose upper bound is read at run time."""
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), tg.float32),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def first_n(a, n, c, a_smem, loaded):
        def add(i, total):
            tg.copy_gmem_to_smem(a.at[i], a_smem, loaded)
            tg.barrier_wait(loaded)
            return total + a_smem[...].astype(tg.float32)
        c[...] = tg.fori_loop(0, n[0], add, tg.zeros((T, T), tg.float32))
    return first_n


def sum_while_below_n():
    """The same sum with tg.while_loop, its condition comparing the counter with the scalar read each test."""
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), tg.float32),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def while_below_n(a, n, c, a_smem, loaded):
        c[...] = tg.zeros((T, T), tg.float32)

        def add(i):
            tg.copy_gmem_to_smem(a.at[i], a_smem, loaded)
            tg.barrier_wait(loaded)
            c[...] = c[...] + a_smem[...].astype(tg.float32)
            return i + 1
        tg.while_loop(lambda i: i < n[0], add, 0)
    return while_below_n


def tiles_of_runtime_extent(blocks):
    """c[i*T:(i+1)*T] = a[i] for i < n[0], the tiles dealt over `blocks` blocks by tg.nd_loop of a run-time extent."""
    @tg.kernel(out_shape=tg.ShapeDtype((5 * T, T), F16), grid=(blocks,), grid_names=("b",),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def runtime_extent(a, n, c, a_smem, loaded):
        @tg.nd_loop((n[0],), collective_axes="b")
        def _tile(info):
            (i,) = info.index
            tg.copy_gmem_to_smem(a.at[i], a_smem, loaded)
            tg.barrier_wait(loaded)
            tg.copy_smem_to_gmem(a_smem, c.at[tg.ds(i * T, T)])
            tg.wait_smem_to_gmem(0)
    return runtime_extent


def smem_prefetched_chunks(chunk, steps):
    """Pallas's scalar prefetch by hand: each step copies a chunk of idx into SMEM and reads its first element,
    c[s*T:(s+1)*T] = a[idx[s * chunk]]; the read sees the chunk of its own step."""
    @tg.kernel(out_shape=tg.ShapeDtype((steps * T, T), F16),
               scratch_shapes=[tg.SMEM((chunk,), tg.int32), tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1),
                               tg.Barrier(num_arrivals=1)])
    def prefetched(a, idx, c, idx_smem, a_smem, idx_loaded, loaded):
        def step(s, _):
            tg.copy_gmem_to_smem(idx.at[tg.ds(s * chunk, chunk)], idx_smem, idx_loaded)
            tg.barrier_wait(idx_loaded)
            tg.copy_gmem_to_smem(a.at[idx_smem[0]], a_smem, loaded)
            tg.barrier_wait(loaded)
            tg.copy_smem_to_gmem(a_smem, c.at[tg.ds(s * T, T)])
            tg.wait_smem_to_gmem(0)
        tg.fori_loop(0, steps, step, None)
    return prefetched


def scaled_by_scalar():
    """c = x[1] * a[0] in f32: an int32 scalar read at run time in register math."""
    @tg.kernel(out_shape=tg.ShapeDtype((T, T), tg.float32),
               scratch_shapes=[tg.SMEM((T, T), F16), tg.Barrier(num_arrivals=1)])
    def scaled(a, x, c, a_smem, loaded):
        tg.copy_gmem_to_smem(a.at[0], a_smem, loaded)
        tg.barrier_wait(loaded)
        c[...] = x[1] * a_smem[...].astype(tg.float32)
    return scaled


# ----------------------------------------------------------------------------- inputs and numpy results

def _tiles(count, seed):
    return np.random.default_rng(seed).standard_normal((count, T, T)).astype(np.float16)


def _rows_at(a, start, rows=T):
    """a[start:start+rows] with zero rows where it leaves a (TMA's zero fill)."""
    out = np.zeros((rows,) + a.shape[1:], a.dtype)
    lo, hi = max(start, 0), min(start + rows, len(a))
    if lo < hi:
        out[lo - start:hi - start] = a[lo:hi]
    return out


def rows_case():
    a = _tiles(5, 0).reshape(-1, T)[:300]
    off = np.array([0, 17, 250, -5], np.int32)          # the last two reach past the end and before the start
    return tile_rows_at_offsets(300, 4), (a, off), np.concatenate([_rows_at(a, o) for o in off])


def expert_case():
    w = _tiles(3, 1)
    ids = np.array([2, 0, 1, 2, 3], np.int32)           # 3 is past the last expert: TMA reads zeros
    return expert_weights(5), (w, ids), np.concatenate([w[i] if i < 3 else np.zeros((T, T), w.dtype) for i in ids])


def store_case():
    a = _tiles(3, 2)
    off = np.array([0, 64, 150], np.int32)              # 150 + 64 leaves c (200 rows): the rest is dropped
    expected = np.full((200, T), np.nan)
    for tile, o in zip(a, off):
        expected[o:o + T] = tile[:200 - o]
    return stores_at_offsets(200, 3), (a, off), expected


def when_case(flag):
    a = _tiles(1, 3)[0]
    return copy_when_flag_set(), (a, np.array([flag], np.int32)), a.astype(np.float64) * (flag != 0)


def cond_case(first):
    a = _tiles(4, 4)
    return clamped_by_cond(), (a, np.array([first], np.int32)), a[max(first, 0)]


def loop_case(kernel, n):
    a = _tiles(5, 5)
    return kernel, (a, np.array([n], np.int32)), a[:n].astype(np.float64).sum(axis=0)


def extent_case(n):
    a = _tiles(5, 6)
    expected = np.full((5 * T, T), np.nan)
    expected[:n * T] = a[:n].reshape(-1, T)
    return tiles_of_runtime_extent(2), (a, np.array([n], np.int32)), expected


def prefetch_case():
    a = _tiles(5, 7)
    idx = np.repeat(np.array([3, 1, 4], np.int32), 4)   # chunks of 4 (16 bytes, the least TMA copies)
    return smem_prefetched_chunks(4, 3), (a, idx), np.concatenate([a[3], a[1], a[4]])


def scaled_case():
    a = _tiles(1, 8)
    return scaled_by_scalar(), (a, np.array([2, -3], np.int32)), -3.0 * a[0].astype(np.float64)


CASES = {
    "tma_load_at_row_offsets": rows_case,
    "tma_load_of_an_expert_matrix": expert_case,
    "tma_store_at_row_offsets": store_case,
    "when_flag_set": lambda: when_case(1),
    "when_flag_clear": lambda: when_case(0),
    "cond_clamps_an_index": lambda: cond_case(-2),
    "fori_loop_upper_bound": lambda: loop_case(sum_of_first_n(), 3),
    "while_loop_condition": lambda: loop_case(sum_while_below_n(), 4),
    "nd_loop_extent": lambda: extent_case(3),
    "smem_prefetched_chunks": prefetch_case,
    "register_math": scaled_case,
}


def matches(out, expected):
    """`out` equals `expected` (within f16 rounding) wherever `expected` is not NaN."""
    written = ~np.isnan(expected)
    return np.allclose(np.asarray(out, np.float64)[written], expected[written], rtol=1e-3, atol=1e-3)

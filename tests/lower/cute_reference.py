"""A Blackwell persistent GEMM written directly with CuTe DSL's public API: the reference tilegemm's rungs are
compared with (test_sm100_conformance.py).

NVIDIA's wheel ships no example kernels, so this one is written here from the
library's own building blocks, which encode NVIDIA's choices: the tiled MMA
(`blackwell_helpers.make_trivial_tiled_mma`), the operand SMEM layouts
(`make_smem_layout_a/b`), the TMA atoms for an MMA's operands
(`cute.nvgpu.make_tiled_tma_atom_A/B` with `cluster_shape_to_tma_atom_A/B`),
the mainloop and accumulator pipelines (`PipelineTmaUmma`,
`PipelineUmmaAsync`) and the TMEM allocator (`TmemAllocator`).

c[m, n] = a[m, k] @ b[k, n] (row-major f16, f32 accumulation, f16 out). A cluster
of 1 block (1-CTA MMAs, 128x128 tiles) or 2 blocks (2-CTA MMAs, 256x256 tiles)
walks output tiles round-robin. Warp 5 issues the TMA loads, warp 4 the
MMAs (in the leader block), warps 0-3 load the accumulator from TMEM and
store C. It is compiled for sm_100a only, never run.
"""
import tempfile

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_helpers
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05
from cutlass.cute.runtime import make_fake_stream, make_ptr

from tilegemm.lower import binutils

STAGES = 4
TILE_K = 64
EPILOGUE_WARPS, MMA_WARP, TMA_WARP = 4, 4, 5
THREADS = 32 * 6
EPILOGUE_COLUMNS = 64     # accumulator columns one tcgen05.ld 32x32b.x64 reads per thread
ALL_THREADS_BARRIER, TMEM_ADDRESS_BARRIER = 1, 2


class PersistentGemm:
    """The kernel for one problem shape and MMA flavour (`two_cta`: 256x256 tiles over a pair of blocks)."""

    def __init__(self, m, n, k, two_cta, num_clusters=74):
        self.shape = (m, n, k)
        self.two_cta = two_cta
        self.cta_group = tcgen05.CtaGroup.TWO if two_cta else tcgen05.CtaGroup.ONE
        self.cluster_mn = (2, 1) if two_cta else (1, 1)
        self.mma_tiler = (256, 256, TILE_K) if two_cta else (128, 128, TILE_K)
        self.num_clusters = num_clusters

    @cute.jit
    def __call__(self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer, stream: cuda.CUstream):
        m, n, k = self.shape
        a = cute.make_tensor(a_ptr, cute.make_layout((m, k), stride=(k, 1)))        # K-major
        b = cute.make_tensor(b_ptr, cute.make_layout((n, k), stride=(1, n)))        # b[k, n] seen as (N, K): N-major
        c = cute.make_tensor(c_ptr, cute.make_layout((m, n), stride=(n, 1)))
        f16 = cutlass.Float16
        tiled_mma = sm100_helpers.make_trivial_tiled_mma(f16, f16, OperandMajorMode.K, OperandMajorMode.MN,
                                                         cutlass.Float32, self.cta_group, self.mma_tiler[:2])
        cluster = cute.tiled_divide(cute.make_layout((*self.cluster_mn, 1)), (tiled_mma.thr_id.shape,))
        a_layout = sm100_helpers.make_smem_layout_a(tiled_mma, self.mma_tiler, f16, STAGES)
        b_layout = sm100_helpers.make_smem_layout_b(tiled_mma, self.mma_tiler, f16, STAGES)
        a_stage = cute.select(a_layout, mode=[0, 1, 2])
        b_stage = cute.select(b_layout, mode=[0, 1, 2])
        tma_a, tma_a_coords = cute.nvgpu.make_tiled_tma_atom_A(
            sm100_helpers.cluster_shape_to_tma_atom_A(self.cluster_mn, tiled_mma.thr_id), a, a_stage,
            self.mma_tiler, tiled_mma, cluster.shape)
        tma_b, tma_b_coords = cute.nvgpu.make_tiled_tma_atom_B(
            sm100_helpers.cluster_shape_to_tma_atom_B(self.cluster_mn, tiled_mma.thr_id), b, b_stage,
            self.mma_tiler, tiled_mma, cluster.shape)
        pair = cute.size(tiled_mma.thr_id.shape)
        tx_bytes = (cute.size_in_bytes(f16, a_stage) + cute.size_in_bytes(f16, b_stage)) * pair
        self.kernel(tiled_mma, tma_a, tma_a_coords, tma_b, tma_b_coords, c, cluster, a_layout, b_layout,
                    tx_bytes).launch(grid=[pair * self.num_clusters, 1, 1], block=[THREADS, 1, 1],
                                     cluster=[*self.cluster_mn, 1], stream=stream)

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a: cute.CopyAtom, a_coords: cute.Tensor, tma_b: cute.CopyAtom,
               b_coords: cute.Tensor, c: cute.Tensor, cluster: cute.Layout, a_layout: cute.ComposedLayout,
               b_layout: cute.ComposedLayout, tx_bytes: cutlass.Constexpr):
        m, n, k = self.shape
        tile_m, tile_n, _ = self.mma_tiler
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        block, _, _ = cute.arch.block_idx()
        pair = cute.size(tiled_mma.thr_id.shape)
        half = block % pair                                      # 0: the leader block, which issues the MMAs
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        position = cluster.get_flat_coord(rank)

        @cute.struct
        class Storage:
            mainloop: cute.struct.MemRange[cutlass.Int64, 2 * STAGES]
            accumulator: cute.struct.MemRange[cutlass.Int64, 2]
            dealloc: cutlass.Int64
            tmem_address: cutlass.Int32

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(Storage)
        thread = pipeline.CooperativeGroup(pipeline.Agent.Thread)
        mainloop = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.mainloop.data_ptr(), num_stages=STAGES, producer_group=thread,
            consumer_group=thread, tx_count=tx_bytes, cta_layout_vmnk=cluster)
        accumulator = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.accumulator.data_ptr(), num_stages=1, producer_group=thread,
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * EPILOGUE_WARPS * pair),
            cta_layout_vmnk=cluster)
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_address.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=TMEM_ADDRESS_BARRIER, num_threads=THREADS),
            allocator_warp_id=0, is_two_cta=self.two_cta, two_cta_tmem_dealloc_mbar_ptr=storage.dealloc.ptr)

        sA = smem.allocate_tensor(cutlass.Float16, a_layout.outer, byte_alignment=128, swizzle=a_layout.inner)
        sB = smem.allocate_tensor(cutlass.Float16, b_layout.outer, byte_alignment=128, swizzle=b_layout.inner)
        gA = cute.local_tile(a_coords, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None))
        gB = cute.local_tile(b_coords, cute.slice_(self.mma_tiler, (0, None, None)), (None, None))
        mma_slice = tiled_mma.get_slice(half)
        # Blocks along N (mode 2 of the cluster) share A's tile, blocks along M (mode 1) share B's.
        a_peers = cute.make_layout(cute.slice_(cluster, (0, 0, None, 0)).shape)
        b_peers = cute.make_layout(cute.slice_(cluster, (0, None, 0, 0)).shape)
        tAsA, tAgA = cpasync.tma_partition(tma_a, position[2], a_peers, cute.group_modes(sA, 0, 3),
                                           cute.group_modes(mma_slice.partition_A(gA), 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, position[1], b_peers, cute.group_modes(sB, 0, 3),
                                           cute.group_modes(mma_slice.partition_B(gB), 0, 3))
        a_frags, b_frags = tiled_mma.make_fragment_A(sA), tiled_mma.make_fragment_B(sB)
        # The accumulator's TMEM layout (no memory yet): its columns are what TMEM must hold.
        acc_template = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(self.mma_tiler[:2]))
        a_mask = b_mask = None
        if cutlass.const_expr(pair > 1):
            a_mask = cpasync.create_tma_multicast_mask(cluster, position, mcast_mode=2)
            b_mask = cpasync.create_tma_multicast_mask(cluster, position, mcast_mode=1)

        tiles_m, k_tiles = m // tile_m, k // TILE_K
        num_tiles = tiles_m * (n // tile_n)
        first_tile, _, _ = cute.arch.cluster_idx()
        tmem.allocate(cutlass.memory.get_num_tmem_alloc_cols(acc_template))     # by warp 0
        tmem.relinquish_alloc_permit()
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc_template.layout)

        if warp == TMA_WARP:
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, STAGES)
            for tile in cutlass.range(first_tile, num_tiles, self.num_clusters, unroll=1):
                mi, ni = tile % tiles_m, tile // tiles_m
                for kt in cutlass.range(0, k_tiles, 1, unroll=1):
                    mainloop.producer_acquire(state)
                    bar = mainloop.producer_get_barrier(state)
                    cute.copy(tma_a, tAgA[(None, mi, kt)], tAsA[(None, state.index)], tma_bar_ptr=bar,
                              mcast_mask=a_mask)
                    cute.copy(tma_b, tBgB[(None, ni, kt)], tBsB[(None, state.index)], tma_bar_ptr=bar,
                              mcast_mask=b_mask)
                    state.advance()
            mainloop.producer_tail(state)

        if warp == MMA_WARP:
            loads = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, STAGES)
            done = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
            for tile in cutlass.range(first_tile, num_tiles, self.num_clusters, unroll=1):
                if half == 0:
                    accumulator.producer_acquire(done)
                    for kt in cutlass.range(0, k_tiles, 1, unroll=1):
                        mainloop.consumer_wait(loads)
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, kt != 0)
                        for kb in cutlass.range_constexpr(cute.size(a_frags, mode=[2])):
                            cute.gemm(tiled_mma, acc, a_frags[(None, None, kb, loads.index)],
                                      b_frags[(None, None, kb, loads.index)], acc)
                            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                        mainloop.consumer_release(loads)
                        loads.advance()
                    accumulator.producer_commit(done)
                done.advance()

        if warp < EPILOGUE_WARPS:
            # Thread t reads lane t of this block's 128 accumulator rows, EPILOGUE_COLUMNS columns at a time.
            rows = cute.make_layout((128, EPILOGUE_COLUMNS), stride=(1 << 16, 1))
            load = tcgen05.make_tmem_copy(cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64),
                                                              cutlass.Float32),
                                          cute.make_tensor(acc.iterator, rows))
            mine = load.get_slice(tidx)
            ready = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
            for tile in cutlass.range(first_tile, num_tiles, self.num_clusters, unroll=1):
                mi, ni = tile % tiles_m, tile // tiles_m
                accumulator.consumer_wait(ready)
                for j in cutlass.range_constexpr(tile_n // EPILOGUE_COLUMNS):
                    part = cute.make_tensor(acc.iterator + j * EPILOGUE_COLUMNS, rows)
                    regs = cute.make_rmem_tensor(mine.partition_D(part).shape, cutlass.Float32)
                    cute.copy(load, mine.partition_S(part), regs)
                    out = cute.local_tile(c, (128, EPILOGUE_COLUMNS),
                                          (mi * pair + half, ni * (tile_n // EPILOGUE_COLUMNS) + j))
                    mine.partition_D(out).store(regs.load().to(cutlass.Float16))
                cute.arch.fence_view_async_tmem_load()
                accumulator.consumer_release(ready)
                ready.advance()

        # Every warp is done with TMEM (the MMAs completed before the epilogue read them): free it.
        cute.arch.barrier(barrier_id=ALL_THREADS_BARRIER, number_of_threads=THREADS)
        tmem.free(acc.iterator)                                             # by warp 0


def compile_reference(m, n, k, two_cta):
    """(PTX, cubin) of the reference kernel for sm_100a, compiled on the CPU with placeholder pointers."""
    gemm = PersistentGemm(m, n, k, two_cta)
    pointers = [make_ptr(cutlass.Float16, 0, cute.AddressSpace.gmem, assumed_align=16) for _ in range(3)]
    with tempfile.TemporaryDirectory() as dump:
        fn = cute.compile(gemm, *pointers, make_fake_stream(),
                          options=f"--gpu-arch sm_100a --keep-ptx --keep-cubin --dump-dir {dump}")
        return fn.artifacts.PTX, bytes(fn.artifacts.CUBIN)


def reference_sass(cubin):
    return binutils.sass(cubin)

"""Memory the two architectures share: GMEM tensors and TMA descriptors, SMEM views, TMA copies (plain and
multicast), bulk-store groups, and the cluster ranks multicasts and cluster barriers address.

A mixin of `emit.KernelEmitter`: it relies on the emitter's writers (`self.w`,
`self.prologue`, `self.host`), value expressions and scratch tables.
"""
import contextlib
import itertools
import math

from ..lang import dtypes
from ..lang.analysis import box_dims, known_multiple, root_ref
from . import cute_names as cn
from .plan import resolve_view, unsupported
from .rules import BOTH, SM90, lowering


class MemoryOps:
    """Op handlers and helpers for GMEM tensors, SMEM views, TMA copies and cluster addressing."""

    def init_memory(self):
        self.tma_atoms = {}     # key -> (atom var, coords var)
        self.promoted_descriptors = {}   # TMA load atom var -> kernel parameter of its descriptor with L2 promotion
        self.host_tensors = {}  # (id(param), order) -> host variable
        self.kernel_tensors = {}  # id(param) -> kernel parameter holding the whole GMEM array
        self.mcast = {}         # axes -> (mask var, rank var)
        self.tma_partitions = {}   # TMA atom var -> (SMEM partition var, GMEM partition var), built in the prologue
        self.operand_fragments = {}   # (operand, mma var, staged tensor) -> prologue fragment of SMEM descriptors

    # ------------------------------------------------------------------ GMEM tensors and TMA atoms

    def host_tensor(self, param, order):
        """Host variable: a static-shape tensor over `param`'s pointer with its dims in `order`."""
        key = (id(param), tuple(order))
        if key in self.host_tensors:
            return self.host_tensors[key]
        name = self.ref_names[id(param)]
        shape = tuple(param.shape)
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        natural = list(order) == sorted(order)
        var = name if natural else self.names.fresh(f"{name}_t")
        if 1 in shape:
            # CuTe drops static extent-1 modes from a TMA descriptor (a 1-row A became a 1-D copy that no longer
            # matched its 2-D SMEM tile, and faulted); an extent read at run time keeps every mode.
            self.constants["one"] = 1
            extents = cn.shape("one" if shape[d] == 1 else shape[d] for d in order)
            self.host.line(f"{var} = cute.make_tensor({name}_ptr, cute.make_layout({extents}, "
                           f"stride={cn.shape([strides[d] for d in order])}))",
                           f"{param.type}: its extent-1 dimensions read at run time")
        elif natural:
            self.host.line(f"{var} = cute.make_tensor({name}_ptr, cute.make_ordered_layout({cn.shape(shape)}, "
                           f"order={cn.shape(cn.row_major_order(len(shape)))}))", f"{param.type}, row-major")
        else:
            self.host.line(f"{var} = cute.make_tensor({name}_ptr, cute.make_layout("
                           f"{cn.shape([shape[d] for d in order])}, stride={cn.shape([strides[d] for d in order])}))",
                           f"{param.type} with its dimensions in the order {tuple(order)}")
        self.host_tensors[key] = var
        return var

    def kernel_tensor(self, param):
        """Kernel parameter: the whole GMEM array as a row-major tensor."""
        if id(param) not in self.kernel_tensors:
            host = self.host_tensor(param, range(len(param.shape)))
            self.kernel_params.append((host, "cute.Tensor"))
            self.kernel_tensors[id(param)] = host
        return self.kernel_tensors[id(param)]

    def tma_atom(self, op, param, buf, index_dims, order, box, load, multicast, promotion=None):
        """(atom, coordinate tensor) kernel parameters of the TMA descriptor for one kind of copy; a load with L2
        `promotion` (bytes) also gets a descriptor of its own (`promoted_descriptors`, tma_descriptors)."""
        key = (id(param), buf.name, tuple(index_dims), tuple(order), tuple(box), load, multicast, promotion)
        if key in self.tma_atoms:
            return self.tma_atoms[key]
        gmem = self.host_tensor(param, order)
        stem = f"tma_{'load' if load else 'store'}_{buf.name}"
        atom, coords = self.names.fresh(stem), self.names.fresh(f"{stem}_coords")
        if load:
            kind = "CopyBulkTensorTileG2SMulticastOp" if multicast > 1 else "CopyBulkTensorTileG2SOp"
        else:
            kind = "CopyBulkTensorTileS2GOp"
        extra = f", num_multicast={multicast}" if multicast > 1 else ""
        self.host.line(f"{atom}, {coords} = cpasync.make_tiled_tma_atom(cpasync.{kind}(), {gmem}, "
                       f"{buf.stage_layout_expr(index_dims)}, {cn.shape(box)}{extra})", f"{op.loc}")
        self.kernel_params += [(atom, "cute.CopyAtom"), (coords, "cute.Tensor")]
        if promotion is not None:
            desc = self.names.fresh(f"{stem}_l2_{promotion}")
            shared = f", multicast={multicast}" if multicast > 1 else ""
            self.host.line(f"{desc} = tgtma.promoted_descriptor({atom}, {gmem}, {promotion}, {buf.swizzle}{shared})",
                           f"{atom}'s box, asking L2 to fetch {promotion} bytes a miss")
            self.kernel_params.append((desc, "cutlass.GridConstant[TensorMap]"))
            self.promoted_descriptors[atom] = desc
            self.features.add("l2_promotion")
        self.tma_atoms[key] = (atom, coords)
        self.features.add("tma")
        return atom, coords

    # ------------------------------------------------------------------ views

    def tile_coord(self, sel, op, what):
        """Source of `start // size` for a view dimension whose start is a multiple of its size."""
        coord = self.tile_index(sel)
        if coord is not None:
            return coord
        known = sel.static_start if sel.static_start is not None else f"only known to be a multiple of {sel.multiple()}"
        raise unsupported(op, f"{what} whose start is {known}, not a multiple of its size {sel.size}",
                          "start views at multiples of their size (tile-aligned, e.g. tg.ds(i * 64, 64))")

    def tile_index(self, sel):
        """Source of `start // size` of a view dimension, or None when its start is not known to be a multiple
        of its size."""
        size = sel.size
        if sel.static_start is not None:
            return None if sel.static_start % size else str(sel.static_start // size)
        if sel.multiple() % size:
            return None
        return " + ".join(self.divided(t, size) for t in sel.terms if not (isinstance(t, int) and t == 0))

    def divided(self, term, size):
        """Source of term // size for a term that is a multiple of size, simplified where visible: a product
        with a multiple of size, and a sum or difference of multiples of size, are divided term by term."""
        if isinstance(term, int):
            return str(term // size)
        p = term.producer
        if p is not None and p.kind == "binop":
            x, c = p.operands
            if p.attrs["op"] == "mul":
                if isinstance(x, int):
                    x, c = c, x
                if isinstance(c, int) and c % size == 0:
                    return self.scalar(x) if c == size else f"{self.scalar(x)} * {c // size}"
            if p.attrs["op"] in ("add", "sub") and all(known_multiple(o) % size == 0 for o in (x, c)):
                left, right = self.divided(x, size), self.divided(c, size)
                if right == "0":
                    return left
                return f"({left} {'+' if p.attrs['op'] == 'add' else '-'} {right})"
        return f"({self.scalar(term)}) // {size}"

    def transposed_view(self, ref, op):
        """(variable, buffer) of a transposed 2-D view of an SMEM buffer (plain or swizzled), as a CuTe tensor with
        its two modes swapped: registers stored through it land transposed (a swap-AB epilogue writing C^T's
        accumulator as C's rows). A swizzle permutes the stored offsets, so it applies to the view unchanged."""
        buf = self.buffers[id(resolve_view(ref).root)]
        if len(ref.shape) != 2 or ref.producer.kind != "transpose_ref":
            raise unsupported(op, f"{op.kind} of registers into a transposed view of {buf.name} ({buf.ref_type})",
                              "store through tg.transpose_ref(window, (1, 0)) of a 2-D window of an SMEM buffer")
        stored = self.smem_view(ref.producer.operands[0], op)[0]
        var = self.names.fresh(f"{buf.name}_t")
        self.w.line(f"{var} = cute.make_tensor({stored}.iterator, cute.select({stored}.layout, mode=[1, 0]))",
                    "the stored tile with its modes swapped: a transposed view")
        return var, buf

    def smem_selection(self, ref, op, mma_operand=False):
        """(SmemBuffer, RefView, kept dims in CuTe order) of an SMEM view.

        The view's modes are in the buffer's CuTe order, (M, K) or (N, K) for MMA operands
        whatever their major-ness, so a transposed view (tg.transpose_ref) is only lowered as
        an MMA operand (`mma_operand`), where its major-ness is the buffer's layout.
        """
        view = resolve_view(ref)
        buf = self.buffers[id(view.root)]
        if view.transposed and not mma_operand:
            raise unsupported(op, f"{op.kind} of a transposed view of {buf.name} (tg.transpose_ref)",
                              "transposed shared-memory views are lowered as WGMMA/tcgen05 operands; read and "
                              "write the buffer in its stored order elsewhere")
        return buf, view, sorted(view.kept, key=buf.cute_mode)

    def smem_view(self, ref, op, mma_operand=False):
        """Writes the CuTe tensor of an SMEM view (see smem_selection); returns (variable, buffer, RefView, kept
        dims in CuTe order)."""
        buf, view, kept = self.smem_selection(ref, op, mma_operand)
        text = buf.name
        index_dims = [d for d, s in enumerate(view.dims) if s.is_index]
        if index_dims:
            coord = ["None"] * buf.rank
            for d in index_dims:
                coord[buf.cute_mode(d)] = self.index_sum(view.dims[d].terms)
            text = f"{text}[{', '.join(coord)}]"
        if not view.is_whole:
            tiler = tuple(view.dims[d].size for d in kept)
            coords = [self.tile_coord(view.dims[d], op, f"a view of {buf.name}") for d in kept]
            text = f"cute.local_tile({text}, {cn.shape(tiler)}, ({', '.join(coords)}{',' if len(coords) == 1 else ''}))"
        if text == buf.name:
            return text, buf, view, kept
        var = self.names.fresh(f"{buf.name}_view")
        self.w.line(f"{var} = {text}")
        return var, buf, view, kept

    def staged_tensor(self, ref, op, mma_operand=False):
        """(source of a tensor over every stage of the buffer an SMEM view selects from, the coordinates that
        select the view in it), or None when the view indexes a dimension of its tile.

        The tensor is the whole buffer, flat-divided into tiles of the view's shape when the view
        is part of one (modes: the tile's, then the tile coordinates, then the stage modes); the
        coordinates are the view's tile and stage along the modes after the tile's. A partition of
        it is built once, before the loops, and every iteration indexes it with these coordinates,
        as CuTe's own pipelined kernels do, instead of partitioning one stage every time.
        """
        buf, view, kept = self.smem_selection(ref, op, mma_operand)
        if [buf.cute_mode(d) for d in kept] != list(range(len(kept))):
            return None
        tensor, coords = buf.name, []
        if not view.is_whole:
            tensor = f"cute.flat_divide({buf.name}, {cn.shape(view.dims[d].size for d in kept)})"
            coords = [self.tile_coord(view.dims[d], op, f"a view of {buf.name}") for d in kept]
        indexed = sorted((d for d, sel in enumerate(view.dims) if sel.is_index), key=buf.cute_mode)
        return tensor, coords + [self.index_sum(view.dims[d].terms) for d in indexed]

    def operand_descriptors(self, operand, ref, op, mma, partition):
        """Source of the SMEM descriptors of MMA operand `operand` ("A" or "B", the SMEM view `ref`) at
        `k_block`; `partition(tensor)` is the source of the tensor divided into the MMA's operand tiles.

        The fragment of every stage and tile of the operand's buffer (staged_tensor) is built once,
        in the prologue, and indexed here; a view that indexes a dimension of its tile gets a
        fragment of its own, built where it is used.
        """
        staged = self.staged_tensor(ref, op, mma_operand=True)
        if staged is None:
            var = self.smem_view(ref, op, mma_operand=True)[0]
            frag = self.names.fresh(f"{operand.lower()}_frag")
            self.w.line(f"{frag} = {mma}.make_fragment_{operand}({partition(var)})", "SMEM descriptors")
            return f"{frag}[None, None, k_block]"
        tensor, coords = staged
        key = (operand, mma, tensor)
        if key not in self.operand_fragments:
            buf = self.smem_selection(ref, op, mma_operand=True)[0]
            frag = self.names.fresh(f"{buf.name}_frag")
            what = ("every tile and stage of " if tensor != buf.name else "every stage of ") if coords else ""
            self.prologue.line(f"{frag} = {mma}.make_fragment_{operand}({partition(tensor)})",
                               f"SMEM descriptors of {what}{buf.name} as operand {operand}")
            self.operand_fragments[key] = frag
        if not coords:
            return f"{self.operand_fragments[key]}[None, None, k_block]"
        # This stage's (and tile's) descriptors selected once, before the k_block loop: each K block's is then a
        # 64-bit add to it, and ptxas keeps the descriptors of one WGMMA group in registers of their own, issuing
        # the group back to back (indexing the whole fragment per K block re-derived each from the stage offset).
        selected = self.names.fresh(f"{operand.lower()}_descriptors")
        self.w.line(f"{selected} = {self.operand_fragments[key]}[{', '.join(['None', 'None', 'None'] + coords)}]")
        return f"{selected}[None, None, k_block]"

    def box_order(self, gmem, smem, kept, s_view):
        """(the GMEM array's dimensions holding the box's modes, in the SMEM tile's CuTe order; its other
        dimensions, each an index or a size-1 slice of the view: extents of 1 in the box)."""
        view = resolve_view(gmem)
        dims = box_dims(gmem.shape, smem.shape)
        order = [view.axes[dims[s_view.kept.index(d)]] for d in kept]
        return order, [d for d in range(len(view.root.shape)) if d not in order]

    def gmem_tile(self, ref, order, rest, box, coords_tensor):
        """Source of the TMA coordinate tile a GMEM view selects: `box` along the array's dimensions `order`, at
        the view's start along the `rest` (extents of 1 in the box, which the tile drops).

        The tile is taken at the view's element offset (domain_offset) rather than by tile
        index: CuTe gives size-1 modes of a tiled coordinate tensor stride 0, so a tile
        index past the array's last tile would silently select the first tile.
        """
        view = resolve_view(ref)
        starts = [self.index_sum(view.dims[d].terms) for d in order + rest]
        origin = f"cute.domain_offset(({', '.join(starts)}{',' if len(starts) == 1 else ''}), {coords_tensor})"
        if rest:
            origin = f"{origin}[{', '.join(['None'] * len(order) + ['0'] * len(rest))}]"
        zeros = ", ".join("0" for _ in order)
        return f"cute.local_tile({origin}, {cn.shape(box)}, ({zeros}{',' if len(order) == 1 else ''}))"

    def gmem_tile_coords(self, ref, order, rest, box):
        """Sources of the tile coordinates, along the dimensions `order`, of a GMEM view that starts at whole
        boxes; None when it does not, when it indexes dimensions (`rest`), or when the array holds a single
        box along a dimension of it (CuTe gives that tile mode stride 0: a coordinate past the array's end
        would then silently address its first tile, where TMA drops the copy)."""
        view = resolve_view(ref)
        if rest:
            return None
        coords = []
        for d, size in zip(order, box):
            coord = self.tile_index(view.dims[d]) if view.root.shape[d] > size else None
            if coord is None:
                return None
            coords.append(coord)
        return coords

    def tma_operands(self, op, atom, coords_tensor, cta, smem, gmem, order, rest, box):
        """(SMEM source, GMEM source) that the cute.copy of a TMA copy between the views `smem` and `gmem`
        reads. Where both views select whole tiles (staged_tensor, gmem_tile_coords) they index the TMA
        partitions of every stage of the buffer and every box of the array, written into the prologue on the
        atom's first copy; otherwise this copy partitions its own tiles here. `cta`: tma_partition's CTA
        coordinate and layout (the multicast group)."""
        staged = self.staged_tensor(smem, op)
        tiles = self.gmem_tile_coords(gmem, order, rest, box)
        rank = len(box)
        if staged is None or tiles is None:
            s_var = self.smem_view(smem, op)[0]
            g_var, s_part, g_part = (self.names.fresh(x) for x in ("gmem_tile", "smem_part", "gmem_part"))
            self.w.line(f"{g_var} = {self.gmem_tile(gmem, order, rest, box, coords_tensor)}")
            self.w.line(f"{s_part}, {g_part} = cpasync.tma_partition({atom}, {cta}, cute.group_modes({s_var}, 0, "
                        f"{rank}), cute.group_modes({g_var}, 0, {rank}))")
            return s_part, g_part
        tensor, stage = staged
        if atom not in self.tma_partitions:
            buf = self.buffers[id(resolve_view(smem).root)]
            s_part = self.names.fresh(f"{buf.name}_stages" if stage else f"{buf.name}_tma")
            g_part = self.names.fresh(f"{self.ref_name(gmem)}_tiles")
            nones = ", ".join("None" for _ in box)
            self.prologue.line(f"{s_part}, {g_part} = cpasync.tma_partition({atom}, {cta}, cute.group_modes("
                               f"{tensor}, 0, {rank}), cute.group_modes(cute.local_tile({coords_tensor}, "
                               f"{cn.shape(box)}, ({nones}{',' if rank == 1 else ''})), 0, {rank}))",
                               f"TMA views of {'every stage of ' if stage else ''}{buf.name} and of every "
                               f"{cn.shape(box)} box of {self.ref_name(gmem)}")
            self.tma_partitions[atom] = (s_part, g_part)
        s_part, g_part = self.tma_partitions[atom]
        if stage:
            s_part = f"{s_part}[{', '.join(['None'] + stage)}]"
        return s_part, f"{g_part}[{', '.join(['None'] + tiles)}]"

    # ------------------------------------------------------------------ TMA copies

    @lowering("copy_gmem_to_smem", SM90)
    def op_copy_gmem_to_smem(self, op):
        self.copy_gmem_to_smem(op)

    def copy_gmem_to_smem(self, op):
        """A TMA load (multicast along its collective axes): one arrival with the bytes, then the copy."""
        src, dst, barrier = op.arg("src"), op.arg("dst"), op.arg("barrier")
        self.mark(op)
        buf, s_view, kept = self.smem_selection(dst, op)
        self.require_whole(op, s_view, buf, "TMA destination")
        param = root_ref(src)
        order, rest = self.box_order(src, dst, kept, s_view)
        box = [dst.shape[s_view.kept.index(d)] for d in kept]
        axes = op.attrs["collective_axes"]
        n = self.collective_size(axes, op)
        index_dims = [d for d, s in enumerate(s_view.dims) if s.is_index]
        promotion = op.attrs["l2_promotion"]
        atom, coords = self.tma_atom(op, param, buf, index_dims, order + rest, box, True, n, promotion)
        bars, i = self.barrier_ptr(barrier)
        nbytes = math.prod(dst.shape) * dtypes.itemsize(dst.dtype)
        if n > 1:
            mask, rank_var = self.multicast_vars(axes)
            cta = f"{rank_var}, cute.make_layout({n})"
            extra = f", mcast_mask={mask}"
            self.features.add("multicast")
        else:
            cta, extra = "0, cute.make_layout(1)", ""
        if promotion is not None:
            extra += f", tma_desc_ptr=tgtma.descriptor_pointer({self.promoted_descriptors[atom]})"
        s_part, g_part = self.tma_operands(op, atom, coords, cta, dst, src, order, rest, box)
        with self.single_warp():
            with self.w.block("with cute.arch.elect_one():"):
                self.w.line(f"cute.arch.mbarrier_arrive_and_expect_tx({bars.name} + {i}, {nbytes})",
                            "one arrival, and the bytes the copy will deliver")
            self.w.line(f"cute.copy({atom}, {g_part}, {s_part}, tma_bar_ptr={bars.name} + {i}{extra})")

    @lowering("copy_smem_to_gmem", *BOTH)
    def op_copy_smem_to_gmem(self, op):
        src, dst = op.arg("src"), op.arg("dst")
        self.mark(op)
        buf, s_view, kept = self.smem_selection(src, op)
        self.require_whole(op, s_view, buf, "TMA store source")
        order, rest = self.box_order(dst, src, kept, s_view)
        box = [src.shape[s_view.kept.index(d)] for d in kept]
        index_dims = [d for d, s in enumerate(s_view.dims) if s.is_index]
        atom, coords = self.tma_atom(op, root_ref(dst), buf, index_dims, order + rest, box, False, 1)
        s_part, g_part = self.tma_operands(op, atom, coords, "0, cute.make_layout(1)", src, dst, order, rest, box)
        with self.single_warp():
            self.w.line(f"cute.copy({atom}, {s_part}, {g_part})")
            if op.attrs["commit_group"]:
                self.w.line("cute.arch.cp_async_bulk_commit_group()")

    def require_whole(self, op, view, buf, what):
        if not view.is_whole:
            raise unsupported(op, f"a {what} that is part of a buffer's tile ({buf.name} {view.shape})",
                              f"copy whole buffers or whole leading-index selections such as {buf.name}.at[slot]")

    def single_warp(self):
        """A block whose body one warp of the warpgroup runs (inside a core_map: each warp, no guard)."""
        if self.core_map_depth:
            return contextlib.nullcontext()
        return self.w.block("if warp_in_warpgroup == 0:")

    @lowering("commit_smem", *BOTH)
    def op_commit_smem(self, op):
        self.mark(op)
        self.w.line('cute.arch.fence_proxy("async.shared", space="cta")',
                    "make generic SMEM writes visible to TMA / tensor cores")
        if not self.core_map_depth:
            self.warpgroup_sync()

    @lowering("wait_smem_to_gmem", *BOTH)
    def op_wait_smem_to_gmem(self, op):
        self.mark(op)
        n, read_only = op.attrs["n"], op.attrs["read_only"]
        with self.single_warp():
            self.w.line(f"cute.arch.cp_async_bulk_wait_group({n}, read={read_only})")
        if not self.core_map_depth:
            self.warpgroup_sync()

    # ------------------------------------------------------------------ clusters

    def cluster_strides(self):
        sizes = self.graph.config["cluster"]
        return [math.prod(sizes[:i]) for i in range(len(sizes))]

    def collective_size(self, axes, op):
        names = self.graph.config["cluster_names"]
        for a in axes:
            if a not in names:
                raise unsupported(op, f"collective axis {a!r}", f"name cluster axes ({', '.join(names)})")
        return math.prod(self.graph.config["cluster"][names.index(a)] for a in axes)

    def own_cluster_base(self, axes):
        """Source of the cluster rank of this block with its coordinates along `axes` set to 0."""
        cfg = self.graph.config
        parts = []
        for i, (a, stride) in enumerate(zip(cfg["cluster_names"], self.cluster_strides())):
            if a not in axes and cfg["cluster"][i] > 1:
                coord = self.axis_var(a, None)
                parts.append(coord if stride == 1 else f"{coord} * {stride}")
        return " + ".join(parts) if parts else "0"

    def peer_offsets(self, axes):
        """Rank offsets (from the base) of every block along `axes`, in collective-rank order."""
        cfg = self.graph.config
        dims = [(cfg["cluster"][cfg["cluster_names"].index(a)], self.cluster_strides()[cfg["cluster_names"].index(a)])
                for a in axes]
        offsets = []
        for combo in itertools.product(*[range(n) for n, _ in reversed(dims)]):
            offsets.append(sum(c * s for c, (_, s) in zip(combo, reversed(dims))))
        return offsets

    def cluster_peer_ranks(self, axes):
        base = self.own_cluster_base(axes)
        return [f"{base} + {off}" if base != "0" else str(off) for off in self.peer_offsets(axes)]

    def multicast_vars(self, axes):
        """Prologue variables: the multicast mask of the blocks along `axes` and this block's rank among them."""
        if axes in self.mcast:
            return self.mcast[axes]
        cfg = self.graph.config
        pattern = sum(1 << off for off in self.peer_offsets(axes))
        base = self.own_cluster_base(axes)
        mask = self.names.fresh(f"mcast_mask_{'_'.join(axes)}")
        rank = self.names.fresh(f"rank_in_{'_'.join(axes)}")
        shift = "" if base == "0" else f" << ({base})"
        self.prologue.line(f"{mask} = cutlass.Int16({pattern}){shift}", f"blocks along {axes} receive each tile")
        parts, stride = [], 1
        for a in axes:
            n = cfg["cluster"][cfg["cluster_names"].index(a)]
            coord = self.axis_var(a, None)
            parts.append(coord if stride == 1 else f"{coord} * {stride}")
            stride *= n
        self.prologue.line(f"{rank} = {' + '.join(parts)}")
        self.mcast[axes] = (mask, rank)
        return mask, rank

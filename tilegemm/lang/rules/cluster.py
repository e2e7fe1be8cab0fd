"""Clusters: size limit, and multicast or cluster-barrier axes that name real cluster axes."""
from ...errors import KernelError
from ..types import MemorySpace
from ..verify import graph_rule, rule


def cluster_sizes(ctx):
    """{cluster axis name: blocks along it}."""
    config = ctx.graph.config
    return dict(zip(config["cluster_names"], config["cluster"]))


@graph_rule
def cluster_size(graph, ctx):
    """At most 16 blocks per cluster (8 without the non-portable opt-in)."""
    n = 1
    for d in graph.config["cluster"]:
        n *= d
    limits = ctx.limits
    if n > limits.max_cluster_size:
        raise KernelError(f"cluster {tuple(graph.config['cluster'])} has {n} blocks; a cluster holds at most "
                          f"{limits.max_cluster_size} blocks ({limits.portable_cluster_size} portably)",
                          loc=graph.loc)


def check_axes(what, axes, loc, ctx):
    """Every name in `axes` is a cluster axis of this kernel."""
    sizes = cluster_sizes(ctx)
    for axis in axes:
        if axis not in sizes:
            have = ", ".join(sizes) or "none (declare cluster= and cluster_names= on tg.kernel)"
            raise KernelError(f"{what} names {axis!r}, which is not a cluster axis; this kernel's cluster axes: "
                              f"{have}", loc=loc)


@rule("copy_gmem_to_smem")
def copy_axes_are_cluster_axes(op, ctx):
    """Multicast and partitioned copies count blocks along cluster axes only."""
    axes = op.attrs["collective_axes"]
    check_axes("copy_gmem_to_smem collective_axes", axes, op.loc, ctx)
    check_partition(op, axes, ctx)


@rule("alloc")
def barrier_axes_are_cluster_axes(op, ctx):
    """Cluster barriers count arrivals along cluster axes only."""
    if op.result.space == MemorySpace.BARRIER:
        check_axes("ClusterBarrier collective_axes", op.result.type.barrier.collective_axes, op.loc, ctx)


def check_partition(op, axes, ctx):
    """A partitioned copy splits the source in two halves, one per block of a 2-block cluster axis."""
    dim = op.attrs["partitioned_axis"]
    if dim is None:
        return
    src, dst = op.arg("src"), op.arg("dst")
    pairs = [a for a in axes if cluster_sizes(ctx)[a] == 2]
    if len(axes) != 1 or not pairs:
        raise KernelError(f"a partitioned copy splits its source over the 2 blocks of one cluster axis, but "
                          f"collective_axes={axes} (sizes {[cluster_sizes(ctx)[a] for a in axes]})", loc=op.loc)
    if not 0 <= dim < len(src.shape) or src.shape[dim] != 2 * dst.shape[dim]:
        raise KernelError(f"partitioned_axis={dim}: each block loads half of the source along that dimension, so "
                          f"the source {tuple(src.shape)} must be twice the destination {tuple(dst.shape)} there",
                          loc=op.loc)

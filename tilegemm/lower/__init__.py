"""Graph -> CuTe DSL source (sm_90a: TMA, mbarriers, WGMMA, clusters; sm_100a: tcgen05, TMEM, 2-CTA;
SIMT for tg.dot), compile driver, cache.

    lowered = kernel.lower(*specs, arch="sm_90a")   # or lower_graph(graph, arch)
    print(lowered.source)                            # the generated CuTe DSL module
    compiled = lowered.compile()                     # cached in memory and on disk
    compiled.ptx, compiled.cubin, compiled.sass, compiled.resources
    compiled(*device_pointers, stream=stream)        # launch (on a GPU)
"""
from .binutils import Resources
from .cache import cache_dir, memory_clear
from .compiled import CompiledKernel
from .driver import Lowered, lower_graph
from .generated import GeneratedKernel, LaunchDims, Param

__all__ = ["CompiledKernel", "GeneratedKernel", "LaunchDims", "Lowered", "Param", "Resources", "cache_dir",
           "lower_graph", "memory_clear"]

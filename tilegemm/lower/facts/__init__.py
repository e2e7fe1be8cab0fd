"""Facts of compiled kernels read off their PTX and SASS, and checks of those facts, on the CPU.

    from tilegemm.lower.facts import check_kernel, lint_sm100
    compiled = lowered.compile()
    check_kernel(compiled.ptx, lowered.graph)                # barriers, tx bytes, masks, MMAs, waits, PDL vs the graph
    lint_sm100(compiled.ptx, compiled.sass, lowered.graph)  # Blackwell rules (cta_group, elect, TMEM lanes, ...)

Both return a list of `Finding`s (empty when the kernel is consistent);
`verify_compiled` runs both (the lint without SASS), as `Lowered.compile()`
does after every fresh compile, warning with tg.CompiledCodeWarning.
`ptx.Program` parses PTX and derives register values; `facts.KernelFacts`
collects what the checks read; `descriptors` holds the PTX ISA bit layouts of
the tensor-core descriptors.
"""
from .checks import Finding, check_kernel
from .facts import KernelFacts
from .lint import lint_sm100
from .verify import verify_compiled

__all__ = ["Finding", "KernelFacts", "check_kernel", "lint_sm100", "verify_compiled"]

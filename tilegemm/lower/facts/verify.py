"""Every check of one compiled kernel, as the compile driver runs it after a fresh compile."""
from .checks import check_kernel, facts_of
from .lint import lint_sm100


def verify_compiled(ptx, graph, arch):
    """Findings of the semantic checks against `graph` and, for sm_100a, of the Blackwell lint (PTX only)."""
    facts = facts_of(ptx)
    findings = check_kernel(facts, graph)
    if arch == "sm_100a":
        findings += lint_sm100(facts)
    return findings

"""K-slice partial products in an f32 workspace, summed in slice order (split-K and stream-K)."""


def sum_slices(acc, workspace, rows, cols, count):
    """acc = the sum over s < count of workspace[rows(s), cols], left to right (static: the order is fixed at trace
    time, so every element is summed in the same order whatever order the slices were computed in)."""
    acc[...] = workspace.at[rows(0), cols][...]
    for s in range(1, count):
        acc[...] = acc[...] + workspace.at[rows(s), cols][...]

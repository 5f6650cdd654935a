"""The GEMM kernel with its grouped (swizzled) tile order tuned: GROUP_M row panels per group,
autotuned over 4, 8 and 16 (the default kernel is already grouped with GROUP_M = 8), or pinned to
one size by the variant `group_m` (a third of the configurations to compile, and no autotuning
pick between group sizes whose times differ by less than the noise).

Why: programs resident at the same time then cover a GROUP_M x k block of output tiles and reuse
both A and B panels from the 60 MB L2 instead of streaming all of B per row of tiles; the best
group size depends on how many tiles fit in one wave of 132 SMs."""

from kernelskill.authors.builtin.templates.api import EmitContext, GemmTemplate, tile_config

GROUP_SIZES = (4, 8, 16)

GROUPED_CONFIGS = [tile_config(64, 64, 32, 4, 4, group=8)] + [
    tile_config(bm, bn, 32, w, s, group=g)
    for g in GROUP_SIZES
    for bm, bn, w, s in ((128, 128, 8, 3), (128, 128, 8, 4), (128, 64, 8, 4))
]


GROUPED_PREP_CONFIGS = [tile_config(64, 64, 32, 4, 3, group=8)] + [
    tile_config(bm, bn, bk, 8, 3, group=g)
    for g in GROUP_SIZES
    for bm, bn, bk in ((128, 128, 32), (128, 256, 16))
]

GROUPED_PREP16_CONFIGS = [tile_config(64, 64, 64, 4, 3, group=8)] + [
    tile_config(128, 128, 64, 8, 3, group=g) for g in GROUP_SIZES]


def pinned(configs: list[tuple[dict, int, int]], group: int) -> list[tuple[dict, int, int]]:
    """The list's entries of one group size, after its small first entry moved to that size (the
    CPU interpreter runs only the first)."""
    (first, w, s), rest = configs[0], configs[1:]
    return [({**first, "GROUP_M": group}, w, s)] + [c for c in rest if c[0]["GROUP_M"] == group]


class GemmGroupedOrder(GemmTemplate):
    default = False
    configs = GROUPED_CONFIGS
    prep_configs = GROUPED_PREP_CONFIGS
    prep16_configs = GROUPED_PREP16_CONFIGS
    params = {"group_m": list(GROUP_SIZES)}

    def tile_lists(self, ctx: EmitContext) -> tuple[list, list, list]:
        group = self.own(ctx).get("group_m")
        lists = super().tile_lists(ctx)
        return tuple(pinned(c, group) for c in lists) if group in GROUP_SIZES else lists


TEMPLATE = GemmGroupedOrder()

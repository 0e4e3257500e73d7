"""The options of the mesh passes, in one place (as TileLang keeps its pass options in
``pass_config``): :class:`MeshPassConfig`, taken by ``compile_mesh_kernel``'s pipeline
(``engine.mesh_pipeline``) and by each pass's function form.

>>> MeshPassConfig(check_races=True).check_races
True
>>> MeshPassConfig(workspace="heap")
Traceback (most recent call last):
...
ValueError: MeshPassConfig: workspace 'heap' is not one of ['malloc', 'argument']
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["MeshPassConfig", "DEFAULT", "WORKSPACES"]

#: where LowerMeshComm keeps the cores' copies: malloc'd in the kernel, or one argument
WORKSPACES = ("malloc", "argument")


@dataclass(frozen=True)
class MeshPassConfig:
    """What the mesh passes may be told.

    - ``spmdize``: run ``SpmdizeMeshCopies`` first (a global-view kernel in, a kernel
      with comm ops out);
    - ``check_races``: the checked run (``transform.race_check``) for the accesses the
      static race check cannot evaluate;
    - ``workspace``: ``LowerMeshComm``'s ``"malloc"`` or ``"argument"``;
    - ``small_private_bytes``: ``LowerMeshComm`` keeps a per-core buffer this small on
      the stack (copied in and out around its one segment, or a scratch every segment
      overwrites) instead of in the shared array;
    - ``max_index_points``: ``ProtectFoldedIndices`` evaluates an index over at most
      this many points, and protects a larger one that the simplifier changes;
    - ``max_race_elements`` and ``max_race_clocks``: how far the static race check
      goes (accessed elements of one buffer; comm-op executions x cores^2);
    - ``max_select_nodes``: ``SelectMinMax`` rewrites operands of at most this many
      nodes.
    """

    spmdize: bool = False
    check_races: bool = False
    workspace: str = "argument"
    small_private_bytes: int = 4096
    max_index_points: int = 1 << 20
    max_race_elements: int = 1 << 25
    max_race_clocks: int = 1 << 24
    max_select_nodes: int = 24

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "bool" and not isinstance(v, bool):
                raise TypeError(f"MeshPassConfig: {f.name} must be a bool, got {v!r}")
            if f.type == "int" and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ValueError(f"MeshPassConfig: {f.name} must be an int >= 0, got {v!r}")
        if self.workspace not in WORKSPACES:
            raise ValueError(f"MeshPassConfig: workspace {self.workspace!r} is not one of "
                             f"{list(WORKSPACES)}")


#: the options compile_mesh_kernel uses unless told otherwise
DEFAULT = MeshPassConfig()

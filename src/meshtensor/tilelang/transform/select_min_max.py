"""``SelectMinMax``: ``min``/``max`` whose operands read memory become ``select``s.

TVM's C code generator (which TileLang's ``c`` target uses) prints ``min(a, b)`` as
``(a < b ? a : b)`` after binding each operand to a local variable, and it reuses that
variable for any later operand that prints the same within the same block, even when
a store in between changed the memory it read::

    Y[i] = 2 + T.min(0, Y[i])          float v_ = Y[i]; Y[i] = 2 + (0 < v_ ? 0 : v_);
    Y[i] = T.min(X[i], Y[i])           Y[i] = (X[i] < v_ ? X[i] : v_);   // stale v_

(found by the random mesh-kernel fuzzer; stock ``tilelang.compile`` does the same).
``select(a < b, a, b)`` is what ``min`` means in C (the code generator prints ``min`` as
exactly that, NaN included) and is printed inline, operands read where they stand, so
the rewrite changes no value and takes the reuse away. Each operand is printed twice,
so only small flat operands are rewritten: at most ``MeshPassConfig.max_select_nodes``
nodes (24), and no call,
``select``, ``min``, ``max`` or ``let`` inside. In a chain ``max(min(a, b), c)`` only the
innermost becomes a select: nested selects over shared operands made TVM's simplifier
(which TileLang runs after this pass) take exponential time, and a call is never
evaluated twice. A ``min``/``max`` whose operands read no memory, or are larger or
nested, is kept, and so are those TileLang's own lowering creates later (in its
reductions, for example): the bug stays possible there.
"""

from typing import Any

from tvm import tirx

from ..pass_config import DEFAULT, MeshPassConfig

__all__ = ["SelectMinMax", "select_min_max"]


def _nodes(expr: Any) -> list:
    out: list = []
    tirx.stmt_functor.post_order_visit(tirx.Evaluate(expr), out.append)
    return out[:-1]  # without the Evaluate


def _rewrite(node: Any, max_nodes: int) -> Any:
    if not isinstance(node, (tirx.Min, tirx.Max)):
        return None
    a, b = _nodes(node.a), _nodes(node.b)
    if not any(isinstance(n, tirx.BufferLoad) for n in a + b):
        return None
    if len(a) > max_nodes or len(b) > max_nodes or any(isinstance(
            n, (tirx.Call, tirx.Select, tirx.Min, tirx.Max, tirx.Let)) for n in a + b):
        return None
    cond = node.a < node.b if isinstance(node, tirx.Min) else node.a > node.b
    return tirx.Select(cond, node.a, node.b)


def select_min_max(func: tirx.PrimFunc, config: MeshPassConfig = DEFAULT) -> tirx.PrimFunc:
    """The function form of :func:`SelectMinMax`.

    >>> import tilelang
    >>> import tilelang.language as T
    >>> @T.prim_func
    ... def k(Y: T.Tensor((4,), "float32")):
    ...     with T.Kernel(1, threads=1) as bx:
    ...         Y[0] = T.min(Y[1], Y[2])
    ...         Y[3] = T.max(bx, 1) * 1.0
    >>> text = select_min_max(k).script()
    >>> "T.Select(Y[1] < Y[2], Y[1], Y[2])" in text, "T.max(bx, 1)" in text
    (True, True)
    """
    return func.with_body(tirx.stmt_functor.ir_transform(
        func.body, None, lambda n: _rewrite(n, config.max_select_nodes),
        ["tirx.Min", "tirx.Max"]))


def SelectMinMax():  # noqa: N802 (TVM naming)
    """The ``prim_func_pass`` ``"meshtensor.SelectMinMax"`` (see the module docstring);
    ``compile_mesh_kernel`` runs it for target ``c``.

    >>> SelectMinMax().info.name
    'meshtensor.SelectMinMax'
    """
    def transform(func, mod, ctx):
        return select_min_max(func)

    return tirx.transform.prim_func_pass(transform, opt_level=0, name="meshtensor.SelectMinMax")

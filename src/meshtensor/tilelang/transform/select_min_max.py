"""``SelectMinMax``: ``min``/``max`` whose operands read memory become ``select``s.

TVM's C code generator (which TileLang's ``c`` target uses) prints ``min(a, b)`` as
``(a < b ? a : b)`` after binding each operand to a local variable, and it reuses that
variable for any later operand that prints the same within the same block, even when
a store in between changed the memory it read::

    Y[i] = 2 + T.min(0, Y[i])          float v_ = Y[i]; Y[i] = 2 + (0 < v_ ? 0 : v_);
    Y[i] = T.min(X[i], Y[i])           Y[i] = (X[i] < v_ ? X[i] : v_);   // stale v_

(found by the random mesh-kernel fuzzer; stock ``tilelang.compile`` does the same).
``select(a < b, a, b)`` is what ``min`` means in C and is printed inline, operands
read where they stand, so the rewrite changes no value and takes the reuse away.
Operands that read no memory keep ``min``/``max``.
"""

from typing import Any

from tvm import tirx

__all__ = ["SelectMinMax", "select_min_max"]


def _reads_memory(expr: Any) -> bool:
    hit: list = []
    tirx.stmt_functor.post_order_visit(
        tirx.Evaluate(expr), lambda n: hit.append(n) if isinstance(n, tirx.BufferLoad) else None)
    return bool(hit)


def _rewrite(node: Any) -> Any:
    if not isinstance(node, (tirx.Min, tirx.Max)):
        return None
    if not (_reads_memory(node.a) or _reads_memory(node.b)):
        return None
    cond = node.a < node.b if isinstance(node, tirx.Min) else node.a > node.b
    return tirx.Select(cond, node.a, node.b)


def select_min_max(func: tirx.PrimFunc) -> tirx.PrimFunc:
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
    return func.with_body(tirx.stmt_functor.ir_transform(func.body, None, _rewrite,
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

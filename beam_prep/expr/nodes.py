"""The expression tree of a derived feature: three frozen node classes and the value types.

A tree comes out of :func:`beam_prep.expr.parse.parse` untyped (``type=None``) and out of
:func:`beam_prep.expr.types.check` typed; the evaluators take typed trees only. Operators are
calls too: ``a + b`` is ``Call("add", (a, b))``, ``-a`` is ``Call("negate", (a,))``.

Value types (``ValueType``):

==============  ======================  ==================================
type            Arrow                   TensorFlow (missing marker)
==============  ======================  ==================================
``float``       float64 (null)          tf.float64 (``NaN``)
``int``         int64 (null)            tf.int64 (``MISSING_INTEGER``)
``string``      utf8 (null)             tf.string (``""``)
``list_string`` list<utf8> (null)       tf.RaggedTensor of tf.string (``[]``)
==============  ======================  ==================================

Example:
    >>> from beam_prep.expr.nodes import Call, Column, Literal
    >>> Call("log1p", (Column("price"),))
    Call(fn='log1p', args=(Column(name='price', type=None),), type=None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal as _TypingLiteral
from typing import Union

ValueType = _TypingLiteral["float", "int", "string", "list_string"]
VALUE_TYPES: tuple[str, ...] = ("float", "int", "string", "list_string")

# The integer missing marker at a layer input; equal to beam_prep.codegen.plan.MISSING_INTEGER
# (a test checks it). Kept here so the Arrow side depends on nothing of codegen.
MISSING_INTEGER = -(2**63)


@dataclass(frozen=True)
class Column:
    """A reference to an input column.

    Attributes:
        name: The input column name.
        type: The column's value type once checked, else None.
    """

    name: str
    type: ValueType | None = None


@dataclass(frozen=True)
class Literal:
    """A numeric or string constant written in the expression.

    Attributes:
        value: The constant (int, float or str; never bool).
        type: ``"int"``, ``"float"`` or ``"string"`` once checked, else None.
    """

    value: int | float | str
    type: ValueType | None = None


@dataclass(frozen=True)
class Call:
    """A function or operator applied to arguments.

    Attributes:
        fn: The function name from the table in ``beam_prep.expr.types`` (operators are
            ``add``, ``subtract``, ``multiply``, ``divide``, ``negate``).
        args: The argument trees, in order.
        type: The result type once checked, else None.
    """

    fn: str
    args: tuple[Node, ...]
    type: ValueType | None = None


Node = Union[Column, Literal, Call]


def columns_of(node: Node) -> tuple[str, ...]:
    """Input column names a tree reads, in first-use order without repeats.

    Example:
        >>> columns_of(Call("add", (Column("a"), Call("log", (Column("b"),)))))
        ('a', 'b')
    """
    seen: dict[str, None] = {}

    def walk(n: Node) -> None:
        if isinstance(n, Column):
            seen.setdefault(n.name, None)
        elif isinstance(n, Call):
            for a in n.args:
                walk(a)

    walk(node)
    return tuple(seen)

"""tidu: generic automatic differentiation over computegraph graphs.

``linearize`` (JVP as a linear graph), ``linear_transpose`` (VJP), higher order by
repetition, and the eager tape runtime ``tidu.eager``, all generic over any
:class:`Primitive`. This release is a skeleton: the public API arrives with the
package's first feature release.
"""

__version__ = "0.1.0"

__all__: list[str] = []

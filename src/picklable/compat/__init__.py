"""Drop-in modules that answer another serializer's API with picklable.

* :mod:`picklable.compat.cloudpickle`: ``import picklable.compat.cloudpickle as
  cloudpickle`` in code written for cloudpickle (see docs/cloudpickle.md for
  what differs, and why).

.. versionadded:: 0.2.0
"""

from __future__ import annotations

__all__: list[str] = []

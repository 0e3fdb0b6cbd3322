"""register_by_value(module) in a fresh interpreter that lacks the module.

Everything the registered module defines ships by value, whatever kind it is:
plain functions and classes, and also the objects its decorators made
(wrapt wrappers, instances of class-based decorators, proxies), which the
locator finds by name in the module and would otherwise send by reference.
Objects of other, importable modules stay references.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

import picklable
from support import checks

HELPERS = textwrap.dedent(
    """
    import functools
    import wrapt

    def plain(x):
        return x * 10

    @wrapt.decorator
    def tagged(wrapped, instance, args, kwargs):
        return ["tagged", wrapped(*args, **kwargs)]

    @tagged
    def wrapt_function(x):
        return x * 10

    class Counted:
        def __init__(self, func):
            functools.update_wrapper(self, func)
            self.calls = 0

        def __call__(self, *args):
            self.calls += 1
            return ["counted", self.calls, self.__wrapped__(*args)]

    @Counted
    def class_decorated(x):
        return x * 10

    class Traced(wrapt.ObjectProxy):
        def __call__(self, *args):
            return ["traced", self.__wrapped__(*args)]

    def _inner(x):
        return x * 10

    proxy = Traced(_inner)
    aliases = {"under a dict": class_decorated}
    uses_importable = functools.partial(functools.reduce, lambda a, b: a + b)
    """
)


@pytest.fixture
def helpers(tmp_path, monkeypatch):
    """A module only this process can import, registered to ship by value."""
    name = "bv_helpers_only_here"
    (tmp_path / f"{name}.py").write_text(HELPERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    picklable.register_by_value(module)
    yield module
    picklable.unregister_by_value(module)
    sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("plain", 30),
        ("wrapt_function", ["tagged", 30]),
        ("class_decorated", ["counted", 2, 30]),  # called once here: the count travels
        ("proxy", ["traced", 30]),
    ],
)
def test_decorator_products_ship_by_value(child, helpers, name, expected):
    """Each object of the registered module runs where the module does not exist."""
    helpers.class_decorated(1)
    assert child.run(checks.call, picklable.dumps(getattr(helpers, name)), 3) == expected


def test_found_under_another_path_of_the_module(child, helpers):
    """An object the locator would find inside the module's containers is copied too."""
    assert child.run(checks.call, picklable.dumps(helpers.aliases["under a dict"]), 3) == [
        "counted",
        1,
        30,
    ]


def test_importable_objects_inside_stay_references(child, helpers):
    """What the registered module holds from importable modules is the receiver's own."""
    payload = picklable.dumps(helpers.uses_importable)
    assert child.run(checks.call, payload, [1, 2, 3]) == 6
    assert child.run(checks.attribute_is_importable_object, payload, "func", "functools", "reduce")


def test_explain_names_the_registration(helpers):
    """explain says why the wrapper is copied: its module is registered by value."""
    text = str(picklable.explain(helpers.wrapt_function))
    assert "register_by_value" in text

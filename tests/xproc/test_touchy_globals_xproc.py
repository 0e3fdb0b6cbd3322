"""Globals that raise when touched (issue 27).

Flask's modules hold werkzeug ``LocalProxy`` objects (``current_app``,
``request``): outside a context every use raises, ``vars(proxy)`` included.
Shipping a ``Blueprint`` failed while dumping: its ``defaultdict``'s factory
is a lambda, which the locator looked for in its package, and the index of
the lambda's module touched the proxy. A value that raises when touched is
now left out of the index (nothing is found in it); cloudpickle ships it.
"""

from __future__ import annotations

import pytest

import picklable
from picklable_testpkg import touchy
from support import checks


def test_the_proxy_raises_when_touched():
    """The stand-in behaves as werkzeug's proxy does outside a context."""
    with pytest.raises(RuntimeError, match="outside of application context"):
        vars(touchy.current_app)


def test_a_blueprint_ships(child):
    """Its defaultdict of defaultdicts (a lambda factory) loads in a fresh child."""
    blueprint = touchy.Blueprint("shop")
    blueprint.handlers["shop"][404] = len
    payload = picklable.dumps(blueprint)
    assert child.run(checks.attribute, payload, "name") == "shop"
    loaded = picklable.loads(payload)
    assert loaded.handlers["shop"][404] is len
    assert loaded.handlers["other"] == {}  # the factory works


def test_a_real_flask_blueprint_ships(child):
    """The case itself (Flask is a test dependency)."""
    import flask

    blueprint = flask.Blueprint("shop", __name__)
    payload = picklable.dumps(blueprint)
    assert child.run(checks.attribute, payload, "name") == "shop"

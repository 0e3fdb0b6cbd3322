"""Tests for ``picklable._code``: the names a code object's instructions take."""

from __future__ import annotations

import argparse
import collections
import dis
import inspect
import json
import types

import pytest

from picklable import _code

GLOBAL_OPS = frozenset(
    {"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_FROM_DICT_OR_GLOBALS"}
)
NESTED_OPS = GLOBAL_OPS | {"LOAD_NAME"}


def _by_dis(code, ops, nested_ops=None):
    """The oracle: what dis.get_instructions says, in the same order."""
    names: dict[str, None] = {}
    stack = [(code, ops)]
    while stack:
        current, wanted = stack.pop()
        for instruction in dis.get_instructions(current):
            if instruction.opname in wanted and type(instruction.argval) is str:
                names[instruction.argval] = None
        inner = ops if nested_ops is None else nested_ops
        stack.extend((c, inner) for c in current.co_consts if type(c) is types.CodeType)
    return list(names)


def _stdlib_codes():
    for module in (argparse, collections, dis, inspect, json, types):
        for value in vars(module).values():
            if isinstance(value, types.FunctionType):
                yield value.__code__
            elif isinstance(value, type):
                for member in vars(value).values():
                    if isinstance(member, types.FunctionType):
                        yield member.__code__


def _many_globals():
    """A function reading 300 globals: arguments past 255 need EXTENDED_ARG."""
    names = [f"g{i}" for i in range(300)]
    source = "def f():\n    return [" + ", ".join(names) + "]\n"
    space: dict[str, object] = {}
    exec(compile(source, "<many>", "exec"), space)
    return space["f"].__code__, names


def _class_in_function():
    def make():
        base = 1

        class Inner:
            x = helper_name  # noqa: F821 - LOAD_NAME in the class body
            y: annotated_name = base  # noqa: F821

            def method(self):
                return global_in_method  # noqa: F821

        return Inner

    return make.__code__


class TestInstructionNames:
    def test_the_same_names_in_the_same_order_as_dis(self):
        """Over the functions and methods of six stdlib modules, as read by dis."""
        codes = list(_stdlib_codes())
        assert len(codes) > 300
        for code in codes:
            assert list(_code.instruction_names(code, GLOBAL_OPS, NESTED_OPS)) == _by_dis(
                code, GLOBAL_OPS, NESTED_OPS
            ), code
            assert list(_code.instruction_names(code, GLOBAL_OPS)) == _by_dis(code, GLOBAL_OPS)

    def test_arguments_past_255(self):
        code, names = _many_globals()
        assert list(_code.instruction_names(code, GLOBAL_OPS)) == names
        assert _by_dis(code, GLOBAL_OPS) == names

    def test_class_bodies_nested_in_a_function(self):
        """A class body reads globals with LOAD_NAME (or, from 3.12, its annotation
        scopes with LOAD_FROM_DICT_OR_GLOBALS): read as the nested ops say."""
        code = _class_in_function()
        found = list(_code.instruction_names(code, GLOBAL_OPS, NESTED_OPS))
        assert found == _by_dis(code, GLOBAL_OPS, NESTED_OPS)
        assert {"helper_name", "global_in_method"} <= set(found)

    def test_only_instructions_that_take_a_name(self):
        with pytest.raises(ValueError, match="LOAD_ATTR"):
            _code.instruction_names(json.dumps.__code__, frozenset({"LOAD_ATTR"}))

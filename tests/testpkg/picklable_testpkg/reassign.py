"""Module attributes that tests reassign between dumps (tests/robustness/test_reassign.py)."""

from __future__ import annotations


def target(x):
    return x + 1


def other(x):
    return x * 100


class Holder:
    def method(self):
        return "original"

    @staticmethod
    def static(x):
        return ("static", x)


def helper():
    return "helper"

"""An importable library written the way real code is: the demo ships its API."""

from __future__ import annotations


def timed(func):
    """A decorator that forgot functools.wraps: the name now holds `wrapper`."""

    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@timed
def area(width, height):
    return width * height


class Option:
    """A decorator that returns an object (like sacred's CLIOption, click's Command)."""

    def __init__(self, func, flag):
        self.apply_function = func
        self.flag = flag

    def __call__(self, *args):
        return self.apply_function(*args)


def option(flag):
    return lambda func: Option(func, flag)


@option("--verbose")
def verbose_option(level):
    return f"verbosity {level}"


def _make_reduction(name):
    def reduction(self):
        return (name, sum(self.values))

    reduction.__name__ = name  # only __name__ fixed, like old pandas
    return reduction


class Series:
    def __init__(self, values):
        self.values = values


Series.total = _make_reduction("total")  # made at run time, set on the class

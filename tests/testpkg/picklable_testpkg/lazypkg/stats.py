"""Loaded on first access of picklable_testpkg.lazypkg.stats."""


def mean(values):
    return sum(values) / len(values)

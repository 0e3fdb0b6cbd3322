"""Damaged payloads fed to ``loads`` in child interpreters (see support.fuzz).

picklable's own payloads (10,000 cases): only clean refusals
(picklable.UnpicklingError), no crash, no hang. numpy's (20,000 cases): the
same, except where numpy's own C code crashes on the damaged state it is given
(a scalar's bytes, ``ndarray.__setstate__``, a dtype's ``__setstate__``):
each such crash is checked to happen inside a numpy callable, and plain
``pickle.loads`` is run on the same bytes. The figures printed here are those
of docs/safety.md.
"""

from __future__ import annotations

import pickle
from collections import Counter

import pytest

import picklable
from picklable_testpkg import hostile
from support import fuzz
from support.child import child_env

CASES = 10_000
SIGNED_CASES = 2_000
NUMPY_CASES = 20_000
KEY = bytes(range(100, 132))


def _summary(title, kinds, report):
    by_kind = Counter()
    for kind, outcome in zip(kinds, report.outcomes):
        by_kind[kind, "loaded" if outcome == "L" else "refused" if outcome == "U" else "other"] += 1
    head = (
        f"{title}: {len(report.outcomes):,} cases in {report.seconds:.1f} s: "
        f"{report.count('L'):,} loaded, {report.count('U'):,} refused with UnpicklingError, "
        f"{len(report.unclean) - len(report.crashes) - len(report.hangs)} other exceptions, "
        f"{len(report.crashes)} crashes, {len(report.hangs)} hangs"
    )
    lines = [head] + [
        f"  {kind:15} {by_kind[kind, 'loaded']:5,} loaded {by_kind[kind, 'refused']:5,} refused "
        f"{by_kind[kind, 'other']:3} other"
        for kind in dict.fromkeys(kinds)
    ]
    return "\n".join(lines)


@pytest.mark.timeout(240)
def test_damaged_payloads(tmp_path, record_property):
    """Truncated, bit-flipped, edited, spliced and random payloads: clean errors only."""
    cases = fuzz.mutations(fuzz.reproducible_payloads(tmp_path, child_env()), CASES, seed=8)
    corpus = tmp_path / "corpus.bin"
    fuzz.write_corpus(corpus, [data for _, data in cases])
    # 30 s: a few damaged memo indexes make the C unpickler zero gigabytes (issue 20),
    # which on a loaded 2-core machine can take seconds; an endless loop still shows.
    report = fuzz.run(corpus, env=child_env(), hang_after=30.0)
    summary = _summary("unsigned", [kind for kind, _ in cases], report)
    print(summary)
    record_property("fuzz_unsigned", summary)
    assert "?" not in report.outcomes
    culprits = [
        f"case {i} ({cases[i][0]}, {outcome}): {cases[i][1].hex()}"
        for i, outcome in report.unclean[:5]
    ]
    assert report.crashes == [] and report.hangs == [], "\n".join([summary, *culprits])
    assert report.unclean == [], "\n".join([summary, *culprits])
    assert report.count("U") > CASES // 2  # most damage is noticed


@pytest.mark.timeout(300)
def test_damaged_payloads_under_an_allow_list(tmp_path, record_property):
    """The same 10,000 cases under an allow-list (the guarded unpickler): clean errors only."""
    cases = fuzz.mutations(fuzz.reproducible_payloads(tmp_path, child_env()), CASES, seed=8)
    corpus = tmp_path / "corpus.bin"
    fuzz.write_corpus(corpus, [data for _, data in cases])
    report = fuzz.run(corpus, env=child_env(), loader="allowed")
    summary = _summary("allow-listed", [kind for kind, _ in cases], report)
    print(summary)
    record_property("fuzz_allowed", summary)
    assert report.crashes == [] and report.hangs == [] and report.unclean == [], summary
    assert report.count("U") > CASES // 2


@pytest.mark.timeout(120)
def test_damaged_signed_payloads(tmp_path, record_property):
    """With a key, every damaged payload is refused: none loads, none crashes."""
    cases = fuzz.mutations(
        fuzz.reproducible_payloads(tmp_path, child_env(), key=KEY), SIGNED_CASES, seed=9
    )
    corpus = tmp_path / "signed.bin"
    fuzz.write_corpus(corpus, [data for _, data in cases])
    report = fuzz.run(corpus, key=KEY, env=child_env())
    summary = _summary("signed", [kind for kind, _ in cases], report)
    print(summary)
    record_property("fuzz_signed", summary)
    assert report.count("U") == SIGNED_CASES, summary


@pytest.mark.timeout(300)
def test_damaged_numpy_payloads(tmp_path, record_property):
    """numpy arrays and scalars: clean errors, but for crashes that are numpy's own."""
    payloads = fuzz.reproducible_payloads(tmp_path, child_env(), kind="numpy")
    cases = fuzz.mutations(payloads, NUMPY_CASES, seed=10)
    corpus = tmp_path / "numpy.bin"
    fuzz.write_corpus(corpus, [data for _, data in cases])
    env = child_env()
    report = fuzz.run(corpus, env=env)
    culprits = fuzz.crash_culprits(cases, report, tmp_path, env)
    summary = "\n".join(
        [_summary("numpy", [kind for kind, _ in cases], report)]
        + [
            f"  crash at case {index} ({kind}): last call {call}; plain pickle.loads: {plain}"
            for index, kind, plain, call in culprits
        ]
    )
    print(summary)
    record_property("fuzz_numpy", summary)
    assert report.hangs == [], summary
    assert [i for i, _ in report.unclean] == report.crashes, summary  # no other exception
    for _, _, _, call in culprits:
        # The last call before the process died was numpy's own C code. (Plain
        # pickle.loads, run on the same bytes, is shown above: a read past a buffer
        # crashes or not depending on the memory layout.)
        assert call.split(" ", 1)[1].startswith("numpy."), summary
    assert report.count("U") > NUMPY_CASES // 2


@pytest.mark.timeout(120)
def test_harness_detects_crashes_and_hangs(tmp_path):
    """The harness reports a payload that kills the child and one that never returns."""
    corpus = tmp_path / "hostile.bin"
    fuzz.write_corpus(
        corpus,
        [
            picklable.dumps([1, 2]),
            pickle.dumps(hostile.CrashOnLoad()),
            b"not a pickle",
            pickle.dumps(hostile.HangOnLoad()),
            picklable.dumps({"a": 1}),
        ],
    )
    # The hanging case sleeps an hour: 10 s tells it apart from a restart on a busy machine.
    report = fuzz.run(corpus, hang_after=10.0, env=child_env())
    assert report.outcomes[0] == "L" and report.outcomes[2] == "U" and report.outcomes[4] == "L"
    assert report.crashes == [1] and report.outcomes[1].startswith("crash (exit -11")
    assert report.hangs == [3]
    assert report.restarts == 2

"""A script's function dumped again gives its kept payload only while nothing it
is made of changed (issue 29; picklable._reduce.repeat).

The oracle is the payload made afresh (the kept payloads forgotten first): after
each change the script makes to a function, to what it reads or holds, or to
the script's file, the payload ``dumps`` returns is that one, byte for byte. A
spawn pool then runs the payloads: the values are the sender's.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from support.child import run_command, run_script

# What the scripts below share: a decorated function of the script, the oracle
# (the payload made afresh, the kept payloads forgotten first) and a task that
# runs a payload in a worker.
COMMON = textwrap.dedent(
    """
    import functools
    import picklable
    from picklable._reduce import repeat

    OFFSET = 3

    def _logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper

    @_logged
    def decorated(x: int) -> int:
        return x + OFFSET

    def fresh(func):
        # Made with no payload kept, then the kept ones put back: the next
        # dump is asked whether the one kept before a change still holds.
        kept = dict(repeat._kept)
        repeat._kept.clear()
        try:
            return picklable.dumps(func)
        finally:
            repeat._kept.update(kept)

    def run(payload, arg):
        return picklable.loads(payload)(arg)

    report, last, shipped = {}, {}, []

    def check(label, func, arg=None):
        # Dumped three times, then afresh: the oracle. The first dump is
        # given the payload kept before the change if its facts still hold;
        # the second keeps one, the third gives it. With ``arg``, the payload
        # runs in a worker later.
        first = picklable.dumps(func)
        kept = picklable.dumps(func)
        again = picklable.dumps(func)
        made = fresh(func)
        report[label] = {
            "same_as_fresh": first == made and again == made,
            "kept": kept is again,
            "changed": last.get(id(func)) not in (None, made),
        }
        last[id(func)] = made
        if arg is not None:
            shipped.append((label, again, arg, func(arg)))

    def run_shipped():
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            ran = pool.starmap(run, [(payload, arg) for _, payload, arg, _ in shipped])
        for (label, _, _, expected), value in zip(shipped, ran):
            report[label]["runs_as_sent"] = value == expected
    """
)

SCRIPT = COMMON + textwrap.dedent(
    """
    import json, math, sys, types, xml

    def plain(x, k=1, *, kw=2):
        return x + OFFSET + k + kw

    def other(x, k=1, *, kw=2):
        return -x

    def counter():
        n = 1
        def get():
            return n
        def put(value):
            nonlocal n
            n = value
        return get, put

    get, put = counter()
    NUMBERS = [1, 2]

    def reads_list():
        return sum(NUMBERS)

    CONFIG = {"scale": 2, 1: (3, "three")}

    def reads_dict(x):
        return x * CONFIG["scale"] + CONFIG[1][0]

    encode = json.dumps

    def uses_json(x):
        return encode(x)

    def uses_len(s):
        return len(s)

    PAIR = (plain, 1)

    def reads_pair(x):
        return PAIR[0](x) + PAIR[1]

    def uses_math(x):
        return math.floor(x)

    def uses_xml(x):
        return xml.etree.ElementTree.Comment(str(x)).text

    class Shape:
        scale = 2

        def __init__(self, width):
            self.width = width

        def area(self):
            return self.width * self.scale

    def build(x):
        return Shape(x).area()

    def typed(shape: Shape) -> Shape:
        return shape

    memory = types.ModuleType("memory")
    memory.value = 5

    def uses_memory(x):
        return memory.value + x

    def swapped(x):
        return A if x else B  # noqa: F821 (bound by the guard below)

    def make_adder(n):
        def add(x):
            return x + n + OFFSET
        return add

    def unnamed(check):
        # A closure no name of the script leads to (only this frame holds it).
        add = make_adder(5)
        check("first unnamed closure", add, 1)
        check("unnamed closure, stable", add, 1)
        add.tag = "t"
        check("unnamed closure, an attribute set", add, 1)
        globals()["OFFSET"] = 9
        check("unnamed closure, its global rebound", add, 1)
        globals()["named_later"] = add
        check("unnamed closure, then named (equal)", add, 1)

    if __name__ == "__main__":
        for func in (decorated, plain, get, reads_list, uses_json, uses_len, reads_pair, uses_math, uses_memory, Shape, build, typed):
            check("first " + func.__name__, func)
        check("reads_pair, stable", reads_pair, 1)
        OFFSET = 4
        check("decorated, its global rebound", decorated, 1)
        check("plain, its global rebound", plain, 1)
        OFFSET = int("100000")
        check("plain, an equal int made again (1)", plain)
        OFFSET = int("100000")
        check("plain, an equal int made again (2)", plain, 1)
        put(7)
        check("closure, its cell filled", get, None)
        plain.tag = "a"
        check("plain, an attribute set", plain)
        plain.tag = "b"
        check("plain, the attribute changed", plain)
        plain.__defaults__ = (10,)
        check("plain, its defaults", plain, 1)
        plain.__kwdefaults__["kw"] = 20
        check("plain, its keyword defaults changed in place", plain, 1)
        plain.__doc__ = "documented"
        check("plain, its doc", plain)
        plain.__qualname__ = "renamed"
        check("plain, its qualname", plain)
        plain.__annotations__["x"] = str
        check("plain, its annotations changed in place", plain)
        decorated.__wrapped__ = other
        check("decorated, its __wrapped__ replaced", decorated)
        plain.__code__ = other.__code__
        check("plain, its code replaced", plain, 1)
        NUMBERS.append(3)
        check("a list it reads, appended to", reads_list, None)
        check("first reads_dict", reads_dict, 1)
        CONFIG["scale"] = 5
        check("a dict it reads, changed in place", reads_dict, 1)
        CONFIG[1] = (4, "three")
        check("a dict it reads, a tuple in it replaced", reads_dict, 1)
        CONFIG["alias"] = CONFIG[1]
        check("a dict it reads, one tuple under two keys", reads_dict, 1)
        CONFIG["alias"] = (4, "three")
        check("a dict it reads, two equal tuples", reads_dict, 1)
        original_dumps = json.dumps
        json.dumps = lambda *args, **kwargs: "replaced"
        check("a module function it reads, replaced in its module", uses_json, 1)
        json.dumps = original_dumps  # multiprocessing's resource tracker uses it (3.15)
        plain.__code__ = plain.__code__.replace(co_consts=plain.__code__.co_consts)
        check("plain, a code object equal but new", plain, 1)
        len = lambda s: -1
        check("a builtin it reads, shadowed in the script", uses_len, "abc")
        Shape.scale = 5
        check("Shape, a class attribute rebound", Shape)
        check("build, the class it makes changed", build, 1)
        check("typed, the class it names changed", typed)
        Shape.extra = "x"
        check("Shape, an attribute added", Shape)
        picklable.dumps(Shape(1))  # copyreg's __slotnames__ cache, set on Shape
        check("Shape, an instance pickled (equal)", Shape)
        def area(self):
            return -self.width
        Shape.area = area
        check("build, a method replaced", build, 1)
        del Shape.extra
        check("Shape, an attribute deleted", Shape)
        Shape.__qualname__ = "Renamed"
        check("Shape, renamed", Shape)
        unnamed(check)
        B = swapped
        check("first swapped", swapped)
        del B
        A = swapped
        check("swapped, the other name bound to it", swapped)
        sys.modules.pop("xml.etree.ElementTree", None)
        check("first uses_xml", uses_xml)
        import xml.etree.ElementTree
        check("xml, with its submodule imported", uses_xml, 1)
        sys.modules["memory"] = memory
        check("memory, now in sys.modules", uses_memory)  # a name no worker imports
        picklable.register_by_value(memory)
        check("memory, registered by value", uses_memory, 1)
        run_shipped()
        print(repr(report))
    """
)


def _wrong(report):
    """The labels whose payload is not the fresh one, or ran with other values."""
    wrong = {label: facts for label, facts in report.items() if not facts["same_as_fresh"]}
    wrong.update(
        (label, facts) for label, facts in report.items() if not facts.get("runs_as_sent", True)
    )
    return wrong


def _checked(script, tmp_path, *not_changes):
    """The report of ``script``'s checks, each payload the fresh one and run as
    sent, each change a change of the payload (labels holding one of
    ``not_changes``, and "first" and "stable" ones, change nothing on purpose);
    the labels whose payload was kept."""
    report = eval(run_script(script, tmp_path))  # the script's repr of plain data
    wrong = _wrong(report)
    assert not wrong, json.dumps(wrong, indent=1)
    unchanged = {
        label
        for label, facts in report.items()
        if not facts["changed"]
        and not label.startswith("first")
        and not any(word in label for word in ("stable", *not_changes))
    }
    assert not unchanged  # each change changed the payload: the test changes something real
    return {label for label, facts in report.items() if facts["kept"]}


def test_kept_payloads_are_the_fresh_ones(tmp_path):
    # The payloads that are kept: nothing unknown in what they are made of.
    kept = _checked(SCRIPT, tmp_path, "equal")
    assert {
        "first plain",
        "first get",
        "reads_pair, stable",
        "plain, its doc",
        "first uses_math",
        "xml, with its submodule imported",
        "first Shape",
        "first build",
        "Shape, an attribute added",
        "unnamed closure, stable",
        "unnamed closure, an attribute set",
        # A short list of numbers: held, its items compared.
        "first reads_list",
        "a list it reads, appended to",
        # A short dict of plain data, tuples among them: its items compared.
        "first reads_dict",
        "a dict it reads, changed in place",
        "a dict it reads, one tuple under two keys",
        "a dict it reads, two equal tuples",
    } <= kept
    # What no fact says enough of: made every time.
    assert not kept & {"first uses_memory", "memory, registered by value"}


DESCRIPTORS = COMMON + textwrap.dedent(
    """
    import json, math
    from math import sqrt

    def uses_sqrt(x):
        return sqrt(x) + OFFSET

    def doubled(shape):
        return 2 * shape.width

    class Shape:
        __slots__ = ["width", "__secret"]

        def __init__(self, width):
            self.width = width

        @property
        def area(self):
            return self.width * self.width

        @staticmethod
        def unit(x):
            return x + OFFSET

        @classmethod
        def make(cls, width):
            return cls(width)

    def measure(x):
        return Shape.make(x).area + Shape.unit(0)

    if __name__ == "__main__":
        for func in (uses_sqrt, Shape, measure):
            check("first " + func.__name__, func)
        check("measure, stable", measure, 2)
        sqrt = math.floor
        check("uses_sqrt, its builtin rebound", uses_sqrt, 2.5)
        real_floor = math.floor
        math.floor = math.ceil
        check("uses_sqrt, its builtin replaced in its module", uses_sqrt)
        math.floor = real_floor
        check("uses_sqrt, its builtin put back", uses_sqrt, 2.5)  # left alone a while
        for _ in range(repeat.ASK_AGAIN):
            picklable.dumps(uses_sqrt)
        check("uses_sqrt, asked again later", uses_sqrt, 2.5)
        Shape.area = property(lambda self: -self.width)
        check("measure, a property replaced", measure, 2)
        Shape.__dict__["area"].fget.__code__ = doubled.__code__
        check("measure, the property's accessor's code replaced", measure, 2)
        Shape.__dict__["unit"].__doc__ = "documented"
        check("Shape, a staticmethod's doc set", Shape)
        Shape.again = Shape.__dict__["make"]
        check("Shape, a classmethod under a second name", Shape)
        Shape.again = classmethod(Shape.__dict__["make"].__func__)
        check("Shape, the second name: an equal new classmethod", Shape)
        Shape.make = classmethod(lambda cls, width: cls(width + 1))
        check("measure, a classmethod replaced", measure, 2)
        Shape.__slots__.append("extra")
        check("Shape, its __slots__ list appended to", Shape)
        Shape.dumper = staticmethod(json.dumps)
        check("Shape, a staticmethod of a module's function", Shape)
        # Not a fact (made every time); last: after three such dumps Shape is left
        # alone for a while.
        Shape.alias = Shape.__dict__["width"]
        check("Shape, a slot's descriptor under another name", Shape)
        Shape.alias = Shape.__dict__["_Shape__secret"]
        check("Shape, that name: another slot's descriptor", Shape)
        run_shipped()
        print(repr(report))
    """
)


def test_kept_payloads_of_descriptors_and_builtins(tmp_path):
    """A class's properties, staticmethods, classmethods and slots, a builtin
    function a function reads: facts too, so these payloads are kept, and each
    change to them gives the fresh payload."""
    kept = _checked(DESCRIPTORS, tmp_path, "later")
    assert {
        "first uses_sqrt",
        "first Shape",
        "first measure",
        "measure, stable",
        "uses_sqrt, its builtin rebound",
        "uses_sqrt, asked again later",
        "Shape, a staticmethod's doc set",
        "Shape, a classmethod under a second name",
        "Shape, the second name: an equal new classmethod",
        "Shape, its __slots__ list appended to",
        "Shape, a staticmethod of a module's function",
    } <= kept


SCRIPT_PLACES = COMMON + textwrap.dedent(
    """
    import multiprocessing
    from picklable._reduce import recheck_scripts

    def spare(x):
        return x * 2

    def other(x):
        return -x

    def kept(func):
        picklable.dumps(func)
        return picklable.dumps(func) is picklable.dumps(func)

    def rebind():
        global spare
        spare = other

    if __name__ == "__main__":
        report = {"decorated kept": kept(decorated), "spare kept": kept(spare)}
        held = picklable.dumps(spare)
        picklable.clear_caches()  # forgets the kept payloads, and what they hold
        again = picklable.dumps(spare)
        report["cleared: made again, the same bytes"] = again is not held and again == held
        SPARE = picklable.dumps(spare)
        BEFORE = spare
        # A rebinding the reading of the guard does not see (a call through a
        # variable): the kept payload's place in the script is checked anyway.
        for step in [rebind]:
            step()
        moved = picklable.dumps(BEFORE)
        report["moved: another payload"] = moved != SPARE
        report["moved: the fresh one"] = moved == fresh(BEFORE)
        DECORATED = picklable.dumps(decorated)
        with open(__file__) as f:
            source = f.read()
        with open(__file__, "w") as f:  # a worker would import another script
            f.write(source + "\\n# edited\\n")
        recheck_scripts()  # what a pool does before it starts workers
        edited = picklable.dumps(decorated)
        report["edited: another payload"] = edited != DECORATED
        report["edited: the fresh one"] = edited == fresh(decorated)
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            report["values"] = pool.starmap(run, [(moved, 5), (edited, 1)])
        print(repr(report))
    """
)


def test_kept_payloads_follow_the_script(tmp_path):
    """Where the script keeps a function, and the script's file, are facts too:
    a name rebound at module level, an edited file, give the fresh payload."""
    report = eval(run_script(SCRIPT_PLACES, tmp_path))
    assert report == {
        "decorated kept": True,
        "spare kept": True,
        "cleared: made again, the same bytes": True,
        "moved: another payload": True,
        "moved: the fresh one": True,
        "edited: another payload": True,
        "edited: the fresh one": True,
        "values": [10, 4],
    }


WITHOUT_FILE = COMMON + textwrap.dedent(
    """
    def swapped(x):
        return A if x else B

    payloads = [picklable.dumps(decorated) for _ in range(3)]
    kept = payloads[1] is payloads[2]
    OFFSET = 4
    after = picklable.dumps(decorated)
    # One function met under one global name, then under another: not the same facts.
    B = swapped
    before_swap = [picklable.dumps(swapped) for _ in range(3)][-1]
    del B
    A = swapped
    swap = picklable.dumps(swapped)
    print(repr([
        kept,
        after != payloads[2],
        after == fresh(decorated),
        picklable.loads(after)(1),
        swap != before_swap,
        swap == fresh(swapped),
        picklable.loads(swap)(True) is not None,
    ]))
    """
)


def test_a_script_without_file_keeps_its_payloads(tmp_path):
    """``python -c`` (as a notebook's kernel, no file a worker can import):
    each function is a plain copy, kept while nothing it is made of changes."""
    done = run_command(("-c", WITHOUT_FILE), tmp_path)
    assert done.returncode == 0, done.stderr
    assert eval(done.stdout) == [True, True, True, 5, True, True, True]


DROPPED = textwrap.dedent(
    """
    import gc
    import weakref
    import picklable
    from picklable._reduce import repeat

    class Shape:
        def __init__(self, width):
            self.width = width

        def area(self):
            return super().__repr__() and self.width  # a __class__ cell: Shape

        @classmethod
        def make(cls, width):
            return super().__new__(cls)  # a classmethod's __class__ cell

        @property
        def side(self):
            return super().__repr__() and self.width

    def work(x):
        return Shape(x).area()

    class Settings:
        pass

    work.settings = [Settings()]  # an attribute (held as it is: a list)

    # What the class's payload reads and holds it: a tuple, a method's attribute.
    class Node:
        def children(self) -> list:  # 3.14: an __annotate__ with a __classdict__ cell
            return super().__dir__() and []  # and a __class__ cell

    Node.kinds = (Node, int)
    Node.children.owner = Node

    if __name__ == "__main__":
        for _ in range(3):
            for obj in (Shape, work, Node):
                picklable.dumps(obj)
        kept = len(repeat._kept)
        refs = [weakref.ref(Shape), weakref.ref(work), weakref.ref(Node), weakref.ref(work.settings[0])]
        del Shape, work, Node, obj
        gc.collect()
        print(repr([kept, [ref() is None for ref in refs], len(repeat._kept)]))
    """
)


def test_kept_payloads_keep_nothing_alive(tmp_path):
    """Classes and a function the script drops are freed, kept payloads or not
    (issue 27), and their kept payloads are forgotten with them: also a class
    that a tuple it holds, or an attribute of its method, names (a payload's
    facts hold no container), and what a dropped function's attribute held
    (the script's kept decisions go with their function)."""
    # Kept: Shape and Node (work's attribute holds an instance: made every time).
    assert eval(run_script(DROPPED, tmp_path)) == [2, [True, True, True, True], 0]


THROUGH_A_POOL = textwrap.dedent(
    """
    import sys
    import picklable

    SCALE = 2

    def work(x):
        return x * SCALE

    class Counter:
        step = 1

        def advance(self, x):
            return x + self.step

    def counted(x):
        return Counter().advance(x)

    if __name__ == "__main__":
        results = []
        with picklable.ProcessPoolExecutor(1, mp_context=sys.argv[1]) as pool:
            for _ in range(3):  # the same function, submitted again: kept payloads
                results.append(pool.submit(work, 5).result())
                results.append(pool.submit(counted, 5).result())
            SCALE = 3
            Counter.step = 10
            results.append(pool.submit(work, 5).result())
            results.append(pool.submit(counted, 5).result())
            work.__defaults__ = None
            SCALE = 4
            results.append(pool.submit(work, 5).result())
        print(results)
    """
)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_pool_runs_what_the_sender_has_at_each_submit(tmp_path, method):
    """A pool encodes its task function at every submit: after the script changes
    a global, a class attribute, the workers compute with the sender's values."""
    out = run_script(THROUGH_A_POOL, tmp_path, args=(method,))
    assert out.strip() == "[10, 6, 10, 6, 10, 6, 15, 15, 20]"


def test_a_value_a_decision_held_weakly_is_not_taken_for_none():
    """What a kept decision holds weakly (a function's attribute, a class its
    reads went through) and has died compares unequal to anything, None too:
    an attribute that held it and now holds None is a change."""
    import gc

    from picklable._reduce import scripts

    class Settings:
        pass

    def work():
        return None

    work.settings = Settings()
    held = tuple(map(scripts._hold, scripts._attributes(work)))
    assert scripts._same_attributes(work, held)
    work.settings = None  # the Settings instance dies with it
    gc.collect()
    assert not scripts._same_attributes(work, held)
    work.settings = 0
    assert not scripts._same_attributes(work, held)


ONLY_PLAIN_CELLS = textwrap.dedent(
    """
    import picklable

    def make(n):
        def add(x):
            return x + n
        return add

    add = make(1)

    if __name__ == "__main__":
        picklable.dumps(add)  # the first payload of the process: no cell object in it
        print(picklable.dumps(add) is picklable.dumps(add))
    """
)


def test_a_closure_whose_cells_travel_as_contents_is_kept(tmp_path):
    """A closure whose cells of plain data travel as their contents, in a process
    whose pickler never met a cell object: its payload is kept all the same."""
    assert run_script(ONLY_PLAIN_CELLS, tmp_path).strip() == "True"

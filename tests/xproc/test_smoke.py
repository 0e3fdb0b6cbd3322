from support import checks

import picklable
from picklable_testpkg import api


def test_no_wraps_function_is_identity_in_child(child):
    """A function decorated without wraps loads as the child's importable object."""
    assert child.run(checks.is_importable_object, picklable.dumps(api.add), "picklable_testpkg.api", "add")

"""The interpreter settings an import holds while it works (bpsync.ingest.run.runtime): set by the
first holder, kept while any import still runs, and the process's own restored after the last."""

from __future__ import annotations

import gc
import sys

from bpsync.ingest.run.runtime import HANDOFF_SECONDS, frozen_heap, quick_handoffs


def test_switch_interval_held_while_any_import_runs() -> None:
    own = sys.getswitchinterval()
    with quick_handoffs():
        assert sys.getswitchinterval() == min(own, HANDOFF_SECONDS)
        with quick_handoffs():  # a second import in the same process (the watcher, the app)
            assert sys.getswitchinterval() == min(own, HANDOFF_SECONDS)
        assert sys.getswitchinterval() == min(own, HANDOFF_SECONDS)  # the first still runs
    assert sys.getswitchinterval() == own


# Frozen objects can still die while a test looks: a pytest-xdist worker's threads let a few
# go. A freeze on top would add the objects made since; a thaw would drop the count to 0.
SLACK = 50


def test_heap_frozen_while_any_import_runs_then_released() -> None:
    assert gc.get_freeze_count() == 0
    older = [object() for _ in range(10)]  # noqa: F841 - alive when the import starts
    with frozen_heap():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        made = [[i] for i in range(1000)]  # made by the first import while it runs
        with frozen_heap():
            assert frozen - SLACK <= gc.get_freeze_count() <= frozen  # not frozen twice
        assert frozen - SLACK <= gc.get_freeze_count() <= frozen
        assert len(made) == 1000
    assert gc.get_freeze_count() == 0


def test_settings_restored_when_the_import_fails() -> None:
    own = sys.getswitchinterval()
    try:
        with quick_handoffs(), frozen_heap():
            raise RuntimeError("the file could not be read")
    except RuntimeError:
        pass
    assert sys.getswitchinterval() == own and gc.get_freeze_count() == 0


def test_garbage_waiting_at_the_start_is_not_held_by_the_freeze() -> None:
    """A cycle left by earlier work (a failed import's traceback, say) is collected before the
    heap is frozen, not kept alive until the import ends."""
    import weakref

    class Cycle:
        pass

    left = Cycle()
    left.me = left  # type: ignore[attr-defined]
    gone = weakref.ref(left)
    del left
    with frozen_heap():
        gc.collect()
        assert gone() is None


def test_a_host_that_froze_its_heap_keeps_it_frozen() -> None:
    """The host's own freeze is neither added to nor thawed (see SLACK)."""
    gc.freeze()
    try:
        own = gc.get_freeze_count()
        made = 1000
        keep = [[i] for i in range(made)]  # objects the host made since it froze
        with frozen_heap():
            assert own - SLACK <= gc.get_freeze_count() <= own  # not frozen on top
        assert own - SLACK <= gc.get_freeze_count() <= own  # and not thawed
        assert len(keep) == made
    finally:
        gc.unfreeze()


def test_a_host_change_of_the_switch_interval_during_the_import_stays() -> None:
    own = sys.getswitchinterval()
    try:
        with quick_handoffs():
            sys.setswitchinterval(0.002)  # the host's own choice, made meanwhile
        assert sys.getswitchinterval() == 0.002
    finally:
        sys.setswitchinterval(own)

"""pool.py: the run's threads (API calls in parallel, at most ``concurrency`` at a time)."""

import threading
import time

from ansible_collections.stacksync.k8s.plugins.module_utils.engine.pool import RunPool


def test_results_come_in_the_order_of_the_items():
    pool = RunPool(4)
    try:
        assert pool.map(lambda i: (time.sleep(0.01 * (5 - i)), i * i)[1], range(5)) == [0, 1, 4, 9, 16]
        assert pool.map(str, iter([1, 2])) == ["1", "2"]  # any iterable
    finally:
        pool.close()


def test_at_most_concurrency_calls_run_at_once_in_other_threads():
    pool, lock, running, peak, threads = RunPool(3), threading.Lock(), [0], [0], set()

    def work(_i):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            threads.add(threading.get_ident())
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    try:
        pool.map(work, range(12))
    finally:
        pool.close()
    assert peak[0] == 3 and threading.get_ident() not in threads


def test_one_item_or_a_concurrency_of_one_runs_in_the_callers_thread_and_starts_no_pool():
    me = threading.get_ident()
    single = RunPool(8)
    assert single.map(lambda _i: threading.get_ident(), [1]) == [me] and single._pool is None
    serial = RunPool(1)
    assert serial.map(lambda _i: threading.get_ident(), range(3)) == [me] * 3 and serial._pool is None
    assert RunPool(4).map(len, []) == []


def test_close_ends_the_threads_and_the_pool_starts_again_on_next_use():
    pool = RunPool(2)
    pool.map(lambda i: i, range(4))
    workers = pool._pool
    pool.close()
    assert pool._pool is None and workers._shutdown
    assert pool.map(lambda i: i + 1, range(3)) == [1, 2, 3]
    pool.close()
    pool.close()  # twice: nothing to end

"""A file that keeps growing while a reader reads it (the readers must read at most what fstat said)."""
import contextlib
import threading


@contextlib.contextmanager
def growing(path, limit=64 << 20):
    """Append zeros to ``path`` in a thread until the block ends (or ``limit`` bytes); the block starts
    only after the first append, so a read cannot win the race and see the file unchanged."""
    stop, grown = threading.Event(), threading.Event()

    def grow():
        with open(path, "ab") as f:
            while not stop.is_set() and f.tell() < limit:
                f.write(b"\0" * 65536)
                f.flush()
                grown.set()

    writer = threading.Thread(target=grow, daemon=True)
    writer.start()
    try:
        if not grown.wait(20):
            raise AssertionError("the writer thread never appended")
        yield
    finally:
        stop.set()
        writer.join()

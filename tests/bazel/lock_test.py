"""requirements_lock.txt pins every requirement of requirements.txt, each with sha256 hashes."""
import re
import sys
import unittest


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(_norm(re.split(r"[<>=!~;\[ ]", line, 1)[0]))
    return names


def _locked(path):
    entries = {}
    current = None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)", line)
            if m:
                current = _norm(m.group(1))
                entries[current] = {"version": m.group(2), "hashes": []}
            for h in re.findall(r"--hash=sha256:([0-9a-f]{64})", line):
                if current is None:
                    raise AssertionError(f"hash before any requirement: {line}")
                entries[current]["hashes"].append(h)
    return entries


class LockTest(unittest.TestCase):
    def test_every_requirement_pinned_with_hashes(self):
        top = _top_level(sys.argv[1])
        locked = _locked(sys.argv[2])
        self.assertTrue(top)
        for name in top:
            self.assertIn(name, locked, f"{name} is in requirements.txt but not pinned in the lock")
        for name, e in locked.items():
            self.assertTrue(e["hashes"], f"{name}=={e['version']} has no --hash")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)

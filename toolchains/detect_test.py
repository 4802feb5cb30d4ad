"""Checks the host device-toolchain detection against the file system it describes.

Every tool the detection reports must exist at the reported path, every resolved toolchain must be
one that was detected (and vice versa), and a tool reported missing must carry a reason. Run with
--test_output=all to see what this host offers.
"""
import json
import os
import sys
import unittest


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class DetectTest(unittest.TestCase):
    def setUp(self):
        self.resolved = _load(sys.argv[1])
        self.detected = _load(sys.argv[2])

    def test_report(self):
        print(json.dumps(self.detected, indent=2, sort_keys=True))

    def test_paths_exist(self):
        for tool, path in self.detected["tools"].items():
            if path and not path.startswith(("linux-", "macos-")):
                self.assertTrue(os.path.exists(path), f"{tool}: detected at {path}, which does not exist")

    def test_missing_tools_have_reasons(self):
        for tool, path in self.detected["tools"].items():
            if not path:
                self.assertTrue(self.detected["reasons"].get(tool), f"{tool} is missing without a reason")

    def test_toolchains_match_detection(self):
        self.assertEqual(sorted(self.resolved), sorted(self.detected["tools"]))
        for tool, path in self.detected["tools"].items():
            self.assertEqual(self.resolved[tool], path, f"toolchain resolution disagrees for {tool}")

    def test_icd_lists(self):
        for tool in ("opencl_icd", "vulkan_icd"):
            if self.detected["tools"][tool]:
                icds = self.detected["details"].get(tool, [])
                self.assertTrue(icds, f"{tool} detected without any ICD file")
                for icd in icds:
                    self.assertTrue(os.path.exists(icd), icd)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)

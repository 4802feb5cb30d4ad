"""Test helpers shared by the core and every backend's tests (no pytest dependency)."""

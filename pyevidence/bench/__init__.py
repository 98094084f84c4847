"""The benchmark behind `make bench` and `pyevidence bench`: see docs/performance.md."""

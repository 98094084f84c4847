"""The benchmark behind `make bench` and `pyevidence bench`: see README "Performance"."""

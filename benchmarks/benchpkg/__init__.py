"""A small importable package for bench_dumps: objects made by a library's factory."""

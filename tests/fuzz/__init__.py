"""The project's crash-detecting fuzzer: case generators (``cases``), the worker that runs one case at a time
(``worker``) and the supervisor that restarts a worker killed by a signal or a hang and tables the outcomes
(``supervisor``). ``python -m fuzz --cases 100000`` (from ``tests/``) runs a sweep; ``test_fuzz.py`` runs CI's
bounded sample."""

"""Benchmarks: ``python -m benchmarks`` runs every module here (each has ``main()``);
``python -m benchmarks backend`` runs one by name."""

"""What the kernel-cache tests share (conftest.py's ``cache_root`` fixture uses it too)."""
from tracejit.codegen import cache, cache_folder


def as_new_process(monkeypatch):
    """Forget the generated modules and the folder decisions, as a new process starts."""
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(cache_folder, "_decided", {})

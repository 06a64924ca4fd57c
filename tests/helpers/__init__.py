"""Helpers the tests share (a package, imported as ``helpers.<module>``: pytest puts
``tests/`` on the import path); fixtures stay in ``conftest.py``."""

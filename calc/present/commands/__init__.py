"""The commands of `python -m calc`, one module each, imported by calc/present/cli.py when its
command runs; `common` holds what several of them read alike."""
